// The registry contract the launch form and the API rely on.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCredit } from "../../lib/credit";
import { ESTIMATOR_IDS, estimators, getEstimator } from "../../lib/credit/registry";

const TURN_FIELDS = [
  "reward",
  "anchor",
  "invalid",
  "agent",
  "value",
  "q1",
  "q2",
  "v2",
  "infoGain",
  "judgeScore",
  "segment",
  "tokens",
  "toolResult",
  "highValue",
];

describe("registry", () => {
  it("has every documented id, keyed by its own id", () => {
    expect(Object.keys(estimators)).toEqual([...ESTIMATOR_IDS]);
    for (const [id, spec] of Object.entries(estimators)) expect(spec.id).toBe(id);
  });
  it("unknown ids raise and list the known ones", () => {
    expect(() => getEstimator("ppo")).toThrow(
      /unknown estimator "ppo"; known: grpo, drgrpo, rloo, reinforcepp, reinforcepp_baseline, gae, gigpo, mapo, mtgrpo, igpo, mars, hiper, archer/,
    );
    expect(getEstimator("gigpo").id).toBe("gigpo");
  });
  it.each([...ESTIMATOR_IDS])("%s: paper, needs and a params schema whose every field has a default and help text", (id) => {
    const spec = estimators[id];
    expect(spec.title.length).toBeGreaterThan(3);
    expect(spec.paper.url).toMatch(/^https:\/\//);
    expect(spec.paper.year).toBeGreaterThan(2010);
    for (const f of [...spec.needs, ...(spec.reads ?? [])]) expect(TURN_FIELDS).toContain(f);
    expect(spec.needs.length, `${id} declares the turn inputs it needs`).toBeGreaterThan(0);
    const defaults = spec.paramsSchema.parse({});
    const json = z.toJSONSchema(spec.paramsSchema, { io: "input" }) as { properties?: Record<string, { default?: unknown; description?: string }> };
    for (const [name, field] of Object.entries(spec.paramsSchema.shape)) {
      expect(field.description, `${id}.${name} description`).toBeTruthy();
      expect(defaults[name], `${id}.${name} default`).not.toBeUndefined();
      expect(json.properties?.[name]?.description).toBeTruthy();
      expect(json.properties?.[name]?.default).toEqual(defaults[name]);
    }
    expect(() => spec.paramsSchema.parse({ notAParam: 1 })).toThrow();
  });

  // `needs` is the contract the trainer's input providers and the heatmap's "which estimators can
  // run on this data" rely on: exactly the fields a request must carry.
  it.each([...ESTIMATOR_IDS])("%s: runs on turns that carry only what it needs, and names each needed field when it is missing", (id) => {
    const spec = estimators[id];
    const sample: Record<string, unknown> = { anchor: "A", value: 0.5, q1: 0.2, infoGain: 0.1, judgeScore: 0.5, segment: 0 };
    const turn = (reward: number, omit?: string) => ({
      reward,
      ...Object.fromEntries(spec.needs.filter((f) => f !== "reward" && f !== omit).map((f) => [f, sample[f]])),
    });
    const request = (omit?: string) => ({
      estimator: id,
      groups: [{ uid: "u", trajectories: [0, 1, 2].map((j) => ({ id: `t${j}`, turns: [turn(0, omit), turn(j, omit)] })) }],
    });
    expect(runCredit(request()).trajectories).toHaveLength(3);
    for (const f of spec.needs.filter((f) => f !== "reward")) expect(() => runCredit(request(f)), `${id} without ${f}`).toThrow(new RegExp(`\\b${f}\\b`));
  });

  it("README documents every estimator and every parameter", () => {
    const readme = readFileSync(new URL("../../lib/credit/README.md", import.meta.url), "utf8");
    for (const [id, spec] of Object.entries(estimators)) {
      const row = readme.split("\n").find((l) => l.startsWith(`| \`${id}\` |`));
      expect(row, id).toBeTruthy();
      for (const name of Object.keys(spec.paramsSchema.shape)) expect(row, `${id}.${name}`).toContain(`\`${name}\``);
      for (const f of spec.needs) expect(row, `${id} needs ${f}`).toContain(`\`${f}\``);
    }
  });
});
