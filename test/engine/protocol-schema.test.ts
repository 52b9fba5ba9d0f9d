// The engine protocol is defined once (zod in workers/engine-client.ts); the JSON Schema the
// Python engine validates with, the Python types it reads params and builds results with, and
// PROTOCOL.md's tables are generated from it and committed. This fails when any committed file
// is stale: run `npx tsx scripts/gen-engine-protocol.ts`.
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  DOC_PATH,
  PY_TYPES_PATH,
  SCHEMA_PATH,
  generatedFiles,
  paramsTable,
  protocolDoc,
  protocolSchema,
  pythonTypes,
  schemaText,
  staleFiles,
} from "../../scripts/gen-engine-protocol";
import { klEstimatorSchema, requestParamsSchemas, resultSchemas, updateParamsSchema, updateResultSchema } from "../../workers/engine-client";
import { trainConfigSchema } from "../../lib/schemas/train";

describe("generated engine protocol", () => {
  it("workers/engine/protocol.schema.json is what the zod schemas generate", () => {
    expect(fs.readFileSync(SCHEMA_PATH, "utf8")).toBe(schemaText());
  });

  it("workers/engine/protocol_types.py is what the zod schemas generate", () => {
    expect(fs.readFileSync(PY_TYPES_PATH, "utf8")).toBe(pythonTypes());
  });

  it("PROTOCOL.md's parameter tables are what the schema generates", () => {
    const doc = fs.readFileSync(DOC_PATH, "utf8");
    expect(doc).toBe(protocolDoc(doc));
    // each command with parameters has its table in the document
    for (const cmd of ["init", "generate", "logprobs", "update"]) expect(doc).toContain(`<!-- params:${cmd} -->`);
  });

  it("the staleness check catches a changed default, range or result field until the files are regenerated", () => {
    expect(staleFiles()).toEqual([]);
    const samples = [{ prompt_ids: [1], response_ids: [2], advantages: 1 }];
    const defaultChanged = { ...requestParamsSchemas, update: updateParamsSchema.extend({ clip_ratio: z.number().min(0).default(0.3) }) };
    const rangeChanged = { ...requestParamsSchemas, update: updateParamsSchema.extend({ epochs: z.number().int().min(1).max(8).default(1) }) };
    expect(defaultChanged.update.parse({ samples }).clip_ratio).toBe(0.3);
    // the Python dataclass carries the default, its docstring the range: both go stale
    const staleDefault = staleFiles(generatedFiles(defaultChanged));
    expect(staleDefault).toEqual(
      expect.arrayContaining(["workers/engine/protocol.schema.json", "workers/engine/protocol_types.py", "workers/engine/PROTOCOL.md"]),
    );
    expect(generatedFiles(defaultChanged).find(([f]) => f === PY_TYPES_PATH)![1]).toContain("    clip_ratio: float = 0.3\n");
    expect(staleFiles(generatedFiles(rangeChanged))).toEqual(expect.arrayContaining(["workers/engine/protocol_types.py"]));
    expect(generatedFiles(rangeChanged).find(([f]) => f === PY_TYPES_PATH)![1]).toContain("[integer ≥ 1 ≤ 8]");
    // a result field the engine must now send
    const resultChanged = { ...resultSchemas, update: updateResultSchema.extend({ seconds: z.number() }) };
    const py = generatedFiles(undefined, resultChanged).find(([f]) => f === PY_TYPES_PATH)![1];
    expect(py).toMatch(/class UpdateResult\(TypedDict\):\n(.*\n)* {4}seconds: float\n/);
    expect(staleFiles(generatedFiles(undefined, resultChanged))).toEqual(["workers/engine/protocol.schema.json", "workers/engine/protocol_types.py"]);
  });

  it("has one params and one result schema per command, unknown params rejected", () => {
    const schema = protocolSchema();
    const params = schema.params as Record<string, { additionalProperties?: unknown }>;
    expect(Object.keys(params).sort()).toEqual(Object.keys(requestParamsSchemas).sort());
    expect(Object.keys(schema.results as object).sort()).toEqual(Object.keys(requestParamsSchemas).sort());
    for (const [cmd, s] of Object.entries(params)) expect([cmd, s.additionalProperties]).toEqual([cmd, false]);
    const py = pythonTypes();
    for (const name of ["InitParams", "UpdateParams", "UpdateSample", "GenerateResult", "GeneratedResponse", "ScoredResponse", "InfoResult"])
      expect(py).toMatch(new RegExp(`^(class ${name}\\b|${name} = )`, "m"));
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

  it("the trainer offers only KL estimators the engine implements", () => {
    const trainer = (trainConfigSchema.shape.klEstimator as unknown as { unwrap(): z.ZodEnum }).unwrap().options;
    for (const k of trainer) expect(klEstimatorSchema.options).toContain(k);
  });
});
