// The OpenAPI document's outer shape (GET /openapi.json, made by lib/api/openapi.ts): what a client
// can rely on; the operations and schemas inside are JSON Schema / OpenAPI objects.
import { z } from "zod";

const jsonObject = z.record(z.string(), z.unknown());

export const openApiDocumentSchema = z
  .object({
    openapi: z.literal("3.1.0"),
    info: z.object({ title: z.string(), version: z.string(), description: z.string() }),
    servers: z.array(z.object({ url: z.string() })),
    components: z.object({
      securitySchemes: z.record(z.string(), jsonObject),
      schemas: z.record(z.string(), jsonObject).describe("Named schemas, referenced as #/components/schemas/<name>."),
    }),
    paths: z.record(z.string(), z.record(z.string(), jsonObject).describe("Method (get, post, delete) -> operation.")),
  })
  .meta({ id: "OpenApiDocument" });
export type OpenApiDocument = z.infer<typeof openApiDocumentSchema>;
