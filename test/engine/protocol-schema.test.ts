// The engine protocol is defined once (zod in workers/engine-client.ts); the JSON Schema the
// Python engine validates with and PROTOCOL.md's tables are generated from it and committed.
// This fails when either committed file is stale: run `npx tsx scripts/gen-engine-protocol.ts`.
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { DOC_PATH, SCHEMA_PATH, paramsTable, protocolDoc, protocolSchema, schemaText } from "../../scripts/gen-engine-protocol";
import { requestParamsSchemas, updateParamsSchema } from "../../workers/engine-client";

describe("generated engine protocol", () => {
  it("workers/engine/protocol.schema.json is what the zod schemas generate", () => {
    expect(fs.readFileSync(SCHEMA_PATH, "utf8")).toBe(schemaText());
  });

  it("PROTOCOL.md's parameter tables are what the schema generates", () => {
    const doc = fs.readFileSync(DOC_PATH, "utf8");
    expect(doc).toBe(protocolDoc(doc));
    // each command with parameters has its table in the document
    for (const cmd of ["init", "generate", "logprobs", "update"]) expect(doc).toContain(`<!-- params:${cmd} -->`);
  });

  it("has one params schema per command, unknown fields rejected", () => {
    const params = protocolSchema().params as Record<string, { additionalProperties?: unknown }>;
    expect(Object.keys(params).sort()).toEqual(Object.keys(requestParamsSchemas).sort());
    for (const [cmd, s] of Object.entries(params)) expect([cmd, s.additionalProperties]).toEqual([cmd, false]);
  });

  it("carries update's defaults, which the table shows (the engine reads them from here)", () => {
    const update = (protocolSchema().params as Record<string, { properties: Record<string, { default?: unknown }> }>).update;
    const defaults = updateParamsSchema.parse({ samples: [{ prompt_ids: [1], response_ids: [2], advantages: 1 }] });
    for (const k of ["clip_ratio", "kl_estimator", "entropy_coef", "loss_agg_mode", "epochs", "max_grad_norm", "temperature"] as const) {
      expect(update.properties[k].default).toEqual(defaults[k]);
      expect(paramsTable("update")).toContain(`| \`${k}\` |`);
    }
    expect(update.properties.clip_ratio.default).toBe(0.2);
  });
});
