import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ENV_IDS, createEnv, defaultConfig, envRegistry, listEnvs } from "../../lib/envs/registry";
import { mixSeed, createRng } from "../../lib/envs/rng";

describe("registry", () => {
  it("holds the nine environments under their ids", () => {
    expect(Object.keys(envRegistry).sort()).toEqual([
      "countdown",
      "frozenlake",
      "household",
      "kuhnpoker",
      "searchqa",
      "shop",
      "sokoban",
      "tictactoe",
      "twentyq",
    ]);
    for (const id of ENV_IDS) expect(envRegistry[id].id).toBe(id);
  });

  it.each(ENV_IDS)("%s: every config field has a default and a description, including maxTurns", (id) => {
    const schema = z.toJSONSchema(envRegistry[id].configSchema, { io: "input" }) as { properties: Record<string, { default?: unknown; description?: string }> };
    expect(Object.keys(schema.properties)).toContain("maxTurns");
    for (const [field, p] of Object.entries(schema.properties)) {
      expect(p.default, `${id}.${field} default`).toBeDefined();
      expect(p.description?.length ?? 0, `${id}.${field} description`).toBeGreaterThan(10);
    }
    const defaults = defaultConfig(id);
    expect(createEnv(id).maxTurns).toBe(defaults.maxTurns);
    expect(createEnv(id, { maxTurns: 7 }).maxTurns).toBe(7);
  });

  it("throws a zod error naming the field on a bad config", () => {
    expect(() => createEnv("sokoban", { width: "wide" })).toThrow(z.ZodError);
    expect(() => createEnv("sokoban", { width: "wide" })).toThrow(/width/);
    expect(() => createEnv("frozenlake", { size: 99 })).toThrow(/size/);
    expect(() => createEnv("shop", { colour: "red" })).toThrow(/colour/); // unknown keys are rejected
  });

  it("throws listing the known ids on an unknown id", () => {
    expect(() => createEnv("chess")).toThrow(/unknown environment "chess".*sokoban.*kuhnpoker/);
  });

  it("listEnvs gives id, title, description and defaults for the UI", () => {
    const list = listEnvs();
    expect(list.map((e) => e.id)).toEqual([...ENV_IDS]);
    for (const e of list) {
      expect(e.title.length).toBeGreaterThan(3);
      expect(e.description.length).toBeGreaterThan(30);
      expect(e.defaults).toEqual(defaultConfig(e.id));
      expect(JSON.parse(JSON.stringify(e))).toEqual(e);
    }
  });
});

describe("rng", () => {
  it("is deterministic and seed-sensitive", () => {
    const a = createRng(1);
    const b = createRng(1);
    const c = createRng(2);
    const xs = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(xs);
    expect(Array.from({ length: 5 }, () => c.next())).not.toEqual(xs);
    expect(mixSeed(1, "a")).not.toBe(mixSeed(1, "b"));
    expect(mixSeed(2 ** 40)).not.toBe(mixSeed(0));
  });

  it("int and pick are roughly uniform", () => {
    const rng = createRng("uniform");
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 40_000; i++) counts[rng.int(4)]++;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(400);
  });
});

describe("extreme configs", () => {
  const cases: [string, object][] = [
    ["sokoban", { width: 5, height: 5, numBoxes: 2 }],
    ["sokoban", { width: 12, height: 12, numBoxes: 4, reverseSteps: 500 }],
    ["frozenlake", { size: 12, holeProbability: 0.5, slippery: true }],
    ["countdown", { numCount: 6, maxNumber: 100, randomTarget: true }],
    ["searchqa", { numPeople: 10, numObjectives: 8, hops: 3 }],
    ["searchqa", { numPeople: 2000, topK: 10 }],
    ["household", { numRooms: 4, objectsPerRoom: 20 }],
    ["household", { numRooms: 1, objectsPerRoom: 3, taskTypes: ["examine_in_light"] }],
    ["shop", { numProducts: 20, resultsPerPage: 1 }],
    ["twentyq", { numCandidates: 40 }],
    ["tictactoe", { randomOpeningMoves: 4 }],
    ["kuhnpoker", { hands: 20, maxTurns: 200 }],
  ];
  it.each(cases)("%s %j generates and plays", async (id, config) => {
    const { playEpisode } = await import("../../lib/envs/play");
    const { randomPolicy } = await import("../../lib/envs/random-policy");
    const env = createEnv(id, config);
    for (let seed = 0; seed < 5; seed++) expect(playEpisode(env, seed, randomPolicy(seed)).length).toBeGreaterThan(0);
  });

  it("an impossible countdown config fails with a clear error instead of hanging", () => {
    const env = createEnv("countdown", { numCount: 2, maxNumber: 2 });
    expect(() => env.reset(0)).toThrow(/no solvable instance/);
  });
});
