// The launch form's estimator section, checked against the lib/credit registry itself: every
// estimator is offered, every parameter has a default and help text, and the section appears
// exactly when a job kind's config schema has an `estimator` property (the coming `train` kind).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { estimators, ESTIMATOR_IDS } from "@/lib/credit";
import { estimatorCatalog } from "@/lib/runs/catalog";
import { estimatorParamFields, estimatorParamValues, estimatorSection } from "@/components/runs/launch-estimators";
import { launchCatalog } from "@/lib/runs/catalog";
import type { JsonSchema } from "@/lib/forms/schema-fields";

const catalog = estimatorCatalog();
const js = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as JsonSchema;

describe("estimator section of the launch form", () => {
  it("offers every registered estimator with its paper", () => {
    expect(catalog.map((e) => e.id)).toEqual([...ESTIMATOR_IDS]);
    for (const e of catalog) expect(e.paper.url).toMatch(/^https?:\/\//);
  });

  it("renders every parameter of every estimator with its default and help text; the defaults are what the estimator parses {} to", () => {
    for (const e of catalog) {
      const fields = estimatorParamFields(e);
      expect(
        fields.map((f) => f.name),
        e.id,
      ).toEqual(Object.keys(estimators[e.id as keyof typeof estimators].paramsSchema.shape));
      for (const f of fields) {
        expect(f.default, `${e.id}.${f.name} default`).not.toBeUndefined();
        expect(f.help, `${e.id}.${f.name} help`).toBeTruthy();
      }
      expect(estimatorParamValues(e), e.id).toEqual(estimators[e.id as keyof typeof estimators].paramsSchema.parse({}));
    }
  });

  it("appears when the job kind's config has `estimator` (a train-like schema), narrowed to its enum, with its default", () => {
    const train = js(
      z.object({
        envId: z.string(),
        estimator: z.string().default("gigpo").describe("Credit estimator."),
        estimatorParams: z.record(z.string(), z.unknown()).default({}),
      }),
    );
    const s = estimatorSection(train, catalog)!;
    expect(s.options.map((o) => o.id)).toEqual([...ESTIMATOR_IDS]);
    expect(s.defaultId).toBe("gigpo");
    expect(s.help).toBe("Credit estimator.");
    const narrowed = estimatorSection(js(z.object({ estimator: z.enum(["grpo", "gigpo"]) })), catalog)!;
    expect(narrowed.options.map((o) => o.id)).toEqual(["grpo", "gigpo"]);
    expect(narrowed.defaultId).toBe("grpo");
  });

  it("does not appear for the baseline job kind, and cloning keeps only known params", () => {
    const baseline = launchCatalog().jobKinds.find((j) => j.id === "baseline")!;
    expect(estimatorSection(baseline.configSchema, catalog)).toBeNull();
    const g = catalog.find((e) => e.id === "gigpo")!;
    expect(estimatorParamValues(g, { gamma: 0.5, bogus: 1 })).toMatchObject({ gamma: 0.5, omega: 1 });
    expect(estimatorParamValues(g, { gamma: 0.5, bogus: 1 })).not.toHaveProperty("bogus");
  });

  it("appears for every launchable job kind whose schema has an estimator (train)", () => {
    for (const j of launchCatalog().jobKinds) {
      const has = !!j.configSchema.properties?.estimator;
      expect(!!estimatorSection(j.configSchema, catalog), j.id).toBe(has);
    }
  });
});
