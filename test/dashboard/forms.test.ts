// The launch form's schema-driven fields and browser-side validation (lib/forms): the training
// config's `model` and `context` become sub-forms, exclusive bounds stay exclusive, zod issues read
// in plain words, and every issue path (client or server) lands at its field.
import { describe, expect, it } from "vitest";
import { launchCatalog } from "@/lib/runs/catalog";
import { checkField, defaultsOf, schemaFields, type Field } from "@/lib/forms/schema-fields";
import { InvalidJson, invalidJsonPaths, issuePathKey, plainIssue, plainMessage, zodFromJsonSchema } from "@/lib/forms/validate";
import { layOut, LAUNCH_LAYOUTS } from "@/lib/forms/launch-layout";
import { launchRunSchema } from "@/lib/schemas/runs";
import { trainConfigSchema } from "@/lib/schemas/train";

const catalog = launchCatalog();
const train = catalog.jobKinds.find((j) => j.id === "train")!;
const fields = schemaFields(train.configSchema, ["envId", "envConfig", "estimator", "estimatorParams"]);
const byName = (n: string) => fields.find((f) => f.name === n)!;

describe("schema fields of the training config", () => {
  it("model and context are discriminated unions with their variants' own fields", () => {
    const model = byName("model") as Extract<Field, { kind: "variant" }>;
    expect(model.kind).toBe("variant");
    expect(model.discriminator).toBe("kind");
    expect(model.variants.map((v) => v.tag)).toEqual(["tiny", "hf"]);
    expect(model.variants[0].fields.map((f) => f.name)).toEqual(["layers", "heads", "dModel", "contextLength", "tokenizer"]);
    const lora = model.variants[1].fields.find((f) => f.name === "lora")!;
    expect(lora).toMatchObject({ kind: "object", nullable: true });
    const context = byName("context") as Extract<Field, { kind: "variant" }>;
    expect(context.discriminator).toBe("strategy");
    expect(context.variants.map((v) => v.tag)).toEqual(["full", "window", "memory"]);
  });

  it("the defaults parse with the server's schema unchanged", () => {
    const d = defaultsOf(fields);
    expect(d.model).toEqual({ kind: "tiny", layers: 2, heads: 4, dModel: 64, contextLength: 80, tokenizer: "char" });
    expect(d.context).toEqual({ strategy: "window", turns: 0 });
    expect(trainConfigSchema.parse(d)).toMatchObject(d);
  });

  it("exclusive bounds are exclusive (lr > 0), inclusive ones inclusive (lrDecayAfter >= 0)", () => {
    expect(checkField(byName("lr"), 0)).toBe("must be greater than 0");
    expect(checkField(byName("lr"), 1e-9)).toBeNull();
    expect(checkField(byName("lr"), 1)).toBeNull(); // max 1 is inclusive
    expect(checkField(byName("lrDecayAfter"), 0)).toBeNull();
    expect(checkField(byName("lrDecayAfter"), -0.1)).toBe("must be at least 0");
  });

  it("every field is in a section of the training layout, and the layout names only real fields", () => {
    const secs = layOut("train", fields, true, true);
    expect(secs.map((s) => s.title)).toEqual(["Task and environment", "Model", "Credit estimator", "Optimisation", "Rollout", "Evaluation", "Checkpoints"]);
    const placed = secs.flatMap((s) => [...s.basic, ...s.advanced].map((f) => f.name)).sort();
    expect(placed).toEqual(fields.map((f) => f.name).sort());
    const named = LAUNCH_LAYOUTS.train.flatMap((s) => [...s.basic, ...(s.advanced ?? [])]);
    for (const n of named)
      expect(
        fields.some((f) => f.name === n),
        n,
      ).toBe(true);
  });

  it("a kind without a layout gets one Parameters section", () => {
    const base = catalog.jobKinds.find((j) => j.id === "baseline")!;
    const f = schemaFields(base.configSchema, ["envId", "envConfig"]);
    expect(layOut("baseline", f, true, false).map((s) => s.title)).toEqual(["Environment", "Parameters"]);
  });
});

describe("validation in plain words, at the field", () => {
  it("the launch body's issues read plainly and map to their fields", () => {
    const r = launchRunSchema.safeParse({ jobKind: "train", name: "x".repeat(201), config: { lr: 0, steps: 2.5, context: { strategy: "window", turns: 99 } } });
    expect(r.success).toBe(false);
    const got = Object.fromEntries(r.error!.issues.map((i) => [issuePathKey(i.path as (string | number)[])!.join(":"), plainIssue(i)]));
    expect(got).toEqual({
      "top:name": "must have at most 200 characters",
      "job:lr": "must be greater than 0",
      "job:steps": "must be a whole number",
      "job:context.turns": "must be at most 64",
    });
  });

  it("server paths route to the same fields, and server messages read plainly", () => {
    expect(issuePathKey("body.config.envConfig.size")).toEqual(["env", "size"]);
    expect(issuePathKey("body.config.estimatorParams.gamma")).toEqual(["est", "gamma"]);
    expect(issuePathKey("body.config.estimator")).toEqual(["est", "estimator"]);
    expect(issuePathKey("body.config.model.lora.alpha")).toEqual(["job", "model.lora.alpha"]);
    expect(issuePathKey("body.name")).toEqual(["top", "name"]);
    expect(issuePathKey("body.tags.3")).toEqual(["top", "tags"]);
    expect(issuePathKey("body")).toBeNull();
    expect(plainMessage("Too small: expected number to be >0")).toBe("must be greater than 0");
    expect(plainMessage("Too small: expected number to be >=1")).toBe("must be at least 1");
    expect(plainMessage("Too big: expected number to be <=100")).toBe("must be at most 100");
    expect(plainMessage("Too big: expected string to have <=200 characters")).toBe("must have at most 200 characters");
    expect(plainMessage("Invalid input: expected int, received number")).toBe("must be a whole number");
    expect(plainMessage("not a training run")).toBe("not a training run");
  });

  it("an environment's config is checked with a zod schema rebuilt from its JSON Schema", () => {
    const lake = catalog.envs.find((e) => e.id === "frozenlake")!;
    const z = zodFromJsonSchema(lake.configSchema);
    expect(z.safeParse({ size: 6 }).success).toBe(true);
    const bad = z.safeParse({ size: 99 });
    expect(bad.success).toBe(false);
    expect(plainIssue(bad.error!.issues[0])).toBe("must be at most 12");
  });

  it("unparseable JSON is found wherever it sits in the config", () => {
    const cfg = { lr: 1, context: new InvalidJson('{"strategy": ', "not valid JSON"), model: { lora: new InvalidJson("{", "bad") } };
    expect(invalidJsonPaths(cfg)).toEqual([
      ["context", "not valid JSON"],
      ["model.lora", "bad"],
    ]);
  });
});
