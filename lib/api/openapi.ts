// The OpenAPI 3.1 document, generated from the route declarations (lib/api/routes.ts), the same
// ones the route handlers enforce. OpenAPI 3.1 uses JSON Schema 2020-12, which z.toJSONSchema
// emits; named schemas (`.meta({id})`) move to components/schemas so every $ref resolves.
import { z } from "zod";
import { pathParamNames, pathParamSchema, statusesOf, type RouteContract } from "./contract";
import { ROUTES } from "./routes";
import { documentedAs, errorSchema } from "../schemas/common";
import type { OpenApiDocument } from "../schemas/openapi";

type Json = Record<string, unknown>;

const REASONS: Record<number, string> = {
  200: "OK",
  201: "Created",
  400: "Invalid input: a parameter, the body, or a JSON limit (depth, string or array length); `issues` names each field",
  401: "Missing or wrong bearer token (the server has TURNLENS_API_TOKEN or TURNLENS_READ_TOKEN set)",
  403: "Refused: a foreign Host or Origin, a cross-site request, or a wrong write key",
  404: "No such run, job, step or trajectory",
  408: "The request body did not arrive within TURNLENS_BODY_TIMEOUT_MS; the connection is closed",
  409: "Conflicts with the stored state (a worker's run, a finished run, a step stored with other content)",
  413: "Request body larger than the endpoint's limit (1 MB; ingest bodies TURNLENS_MAX_BODY_MB, uploads TURNLENS_MAX_UPLOAD_MB)",
  415: "State-changing requests must be Content-Type: application/json",
  429: "Too many ingest requests in flight; retry after the Retry-After header's seconds",
  507: "The server's disk is full: nothing was stored; retry once space is freed",
};

class SchemaSet {
  readonly components: Record<string, Json> = {};

  /** JSON Schema of `s`, its named parts registered as components (input schemas get an "Input" suffix). */
  of(s: z.ZodType, io: "input" | "output"): Json {
    const js = z.toJSONSchema(s, {
      io,
      unrepresentable: "any",
      target: "draft-2020-12",
      cycles: "ref",
      reused: "inline",
      override: (ctx) => {
        const doc = documentedAs.get(ctx.zodSchema as unknown as z.ZodType);
        if (!doc) return;
        const js = ctx.jsonSchema as Json;
        const description = js.description;
        for (const k of Object.keys(js)) delete js[k];
        Object.assign(js, doc, description ? { description } : {});
      },
    }) as Json;
    const suffix = io === "input" ? "Input" : "";
    const defs = (js.$defs ?? {}) as Record<string, Json>;
    delete js.$defs;
    delete js.$schema;
    const fix = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(fix);
      if (node === null || typeof node !== "object") return node;
      const out: Json = {};
      for (const [k, v] of Object.entries(node as Json)) {
        if (k === "$ref" && typeof v === "string" && v.startsWith("#/$defs/")) out[k] = `#/components/schemas/${v.slice(8)}${suffix}`;
        else if (k === "id" && typeof v === "string")
          continue; // zod's registry id, not a JSON Schema keyword
        else out[k] = fix(v);
      }
      return out;
    };
    for (const [name, def] of Object.entries(defs)) this.components[name + suffix] = fix(def) as Json;
    const root = fix(js) as Json;
    // a named root schema becomes a component too, referenced from the operation
    const id = (s.meta() as { id?: string } | undefined)?.id;
    if (id) {
      const ref = `#/components/schemas/${id}${suffix}`;
      if (root.$ref !== ref) this.components[id + suffix] = root; // zod may already have put it in $defs
      return { $ref: ref };
    }
    return root;
  }
}

function operation(c: RouteContract, set: SchemaSet, errorRef: Json): Json {
  const parameters: Json[] = pathParamNames(c.path).map((name) => ({ name, in: "path", required: true, schema: set.of(pathParamSchema(name), "input") }));
  if (c.query instanceof z.ZodObject) {
    for (const [name, s] of Object.entries(c.query.shape as Record<string, z.ZodType>)) {
      const schema = set.of(s, "input");
      const array = JSON.stringify(schema).includes('"type":"array"');
      parameters.push({
        name,
        in: "query",
        required: !s.safeParse(undefined).success,
        ...(schema.description ? { description: schema.description } : {}),
        schema,
        ...(array ? { style: "form", explode: true } : {}),
      });
    }
  }
  if (c.ingest)
    parameters.push({
      name: "X-TurnLens-Write-Key",
      in: "header",
      required: false,
      description: "The run's write key from POST /runs/import (imported runs).",
      schema: { type: "string" },
    });
  const success = c.status ?? (c.method === "POST" ? 201 : 200);
  const okContent = c.produces
    ? Object.fromEntries(Object.entries(c.produces).map(([type, s]) => [type, { schema: set.of(s, "output") }]))
    : { "application/json": { schema: c.response ? set.of(c.response, "output") : { type: "object" } } };
  const responses: Json = {};
  for (const status of statusesOf(c)) {
    if (status === success) responses[status] = { description: REASONS[status], content: okContent };
    else if (status === 200 && c.idempotent)
      responses[status] = { description: "A repeat of a stored write with identical content: the stored answer", content: okContent };
    else
      responses[status] = {
        description: REASONS[status] ?? "Error",
        content: { "application/json": { schema: errorRef } },
        ...(status === 429 ? { headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait" } } } : {}),
      };
  }
  // open when the server has no token set; bearer when it has
  const security = [{}, { bearer: [] }];
  return {
    operationId: c.id,
    summary: c.summary,
    tags: [c.tag],
    parameters,
    ...(c.method === "POST" && c.bodyType === "application/octet-stream"
      ? {
          requestBody: {
            required: true,
            description: "The file's bytes, as they are.",
            content: { "application/octet-stream": { schema: { type: "string", format: "binary", minLength: 1 } } },
          },
        }
      : c.method === "POST"
        ? {
            requestBody: c.body
              ? { required: true, content: { "application/json": { schema: set.of(c.body, "input") } } }
              : { required: false, content: { "application/json": { schema: { type: "object", maxProperties: 0 } } } },
          }
        : {}),
    security,
    responses,
  };
}

/** The document GET /openapi.json serves; its outer shape is the route's response schema (lib/schemas/openapi.ts). */
export function openApiDocument(): OpenApiDocument {
  const set = new SchemaSet();
  const errorRef = set.of(errorSchema, "output");
  const paths: Record<string, Record<string, Json>> = {};
  for (const c of ROUTES) {
    paths[c.path] ??= {};
    paths[c.path][c.method.toLowerCase()] = operation(c, set, errorRef);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "TurnLens API",
      version: "1",
      description:
        "Runs, metrics, rollouts and jobs of TurnLens. Errors are `{error, issues}` with 4xx codes. State-changing requests must be `Content-Type: application/json` and same-origin; the Host must be loopback or in TURNLENS_ALLOWED_HOSTS. With TURNLENS_API_TOKEN set, writes need `Authorization: Bearer <token>`; with TURNLENS_READ_TOKEN set, reads too. Writes to an imported run carry its write key (X-TurnLens-Write-Key).",
    },
    servers: [{ url: "/api/v1" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } }, schemas: set.components },
    paths,
  };
}
