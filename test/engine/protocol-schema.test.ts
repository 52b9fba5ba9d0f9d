// The engine protocol is defined once (zod in lib/schemas/engine.ts); the JSON Schema the
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
import { requestParamsSchemas, resultSchemas, tinyShapeSchema, updateParamsSchema, updateResultSchema } from "../../lib/schemas/engine";
import { tinyInitShape, tinyModelSchema, trainConfigSchema, updateKnobsOf } from "../../lib/schemas/train";

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

  it("the train config's PPO and tiny-model fields are the engine's: its ranges, choices and defaults", () => {
    const cfg = trainConfigSchema.parse({});
    const knobs = updateKnobsOf(cfg);
    // every knob the trainer sends is one update takes, and the defaults it sends pass the engine's schema
    expect(updateParamsSchema.safeParse({ samples: [{ prompt_ids: [1], response_ids: [2], advantages: 1 }], ...knobs }).success).toBe(true);
    expect(Object.keys(knobs).sort()).toEqual(
      ["clip_ratio", "clip_ratio_c", "entropy_coef", "epochs", "kl_coef", "kl_estimator", "loss_agg_mode", "lr", "minibatch_size", "temperature"].sort(),
    );
    const engine = updateParamsSchema.parse({ samples: [{ prompt_ids: [1], response_ids: [2], advantages: 1 }] });
    for (const k of ["clip_ratio", "clip_ratio_c", "kl_estimator", "loss_agg_mode"] as const) expect([k, knobs[k]]).toEqual([k, engine[k]]);
    const shape = (s: z.ZodType) => {
      const { description: _, ...rest } = z.toJSONSchema(s, { io: "input" }) as Record<string, unknown>;
      return rest;
    };
    const train = trainConfigSchema.shape;
    expect(shape(train.clipRatioC)).toEqual(shape(updateParamsSchema.shape.clip_ratio_c));
    expect(shape(train.lossAggregation)).toEqual(shape(updateParamsSchema.shape.loss_agg_mode));
    expect(shape(train.klEstimator)).toEqual(shape(updateParamsSchema.shape.kl_estimator));
    expect(z.toJSONSchema(train.clipRatioC).exclusiveMinimum).toBe(1);
    // the tiny model: the engine's shape under the config's names, its context length the demo's
    const model = cfg.model as Extract<typeof cfg.model, { kind: "tiny" }>;
    const tiny = tinyShapeSchema.parse({});
    expect(tinyInitShape(model)).toEqual({ n_layer: tiny.n_layer, n_head: tiny.n_head, d_model: tiny.d_model, context_length: 80 });
    expect(tinyModelSchema.safeParse({ kind: "tiny", layers: 25 }).success).toBe(tinyShapeSchema.safeParse({ n_layer: 25 }).success);
  });
});
