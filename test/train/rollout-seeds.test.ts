// The sampling seeds of training rollouts: every generate call (one a turn) of a step draws with
// its own seed, against the real engine and an untrained tiny policy. With one seed for all turns
// of a step, each turn replayed the same random draws and an episode repeated one move.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineClient } from "../../workers/engine-client";
import { engineGenerate, parseTrainConfig, playHeldOut } from "../../workers/runners/policy-engine";
import { rolloutSeeds } from "../../workers/runners/train";
import { createEnv } from "../../lib/envs/registry";

// No holes: an episode ends only at the goal (10 moves away at best) or after 20 turns, so every
// episode has many turns in which to show whether its moves vary.
const cfg = parseTrainConfig({ envConfig: { size: 6, holeProbability: 0, maxTurns: 20 }, seed: 7, device: "cpu" });
const makeEnv = () => createEnv(cfg.envId, cfg.envConfig);
const tasks = Array.from({ length: 4 }, (_, i) => ({ uid: `t${i}`, taskSeed: 100 + i }));

describe("rolloutSeeds", () => {
  it("gives every turn of every step its own seed, the same on a rerun", () => {
    const seeds = [0, 1, 2].flatMap((step) => Array.from({ length: 20 }, (_, call) => rolloutSeeds(cfg.seed, step)(call)));
    expect(new Set(seeds).size).toBe(60);
    expect(rolloutSeeds(cfg.seed, 1)(5)).toBe(seeds[25]);
    expect(rolloutSeeds(cfg.seed + 1, 1)(5)).not.toBe(seeds[25]); // the run seed matters too
  });
});

describe("sampled rollouts of an untrained policy", () => {
  let engine: EngineClient;
  beforeAll(async () => {
    engine = new EngineClient({ timeoutMs: 120_000 });
    await engine.init({
      model: "tiny",
      tiny: { n_layer: 2, n_head: 4, d_model: 64, context_length: cfg.model.kind === "tiny" ? cfg.model.contextLength : 80 },
      tokenizer: { kind: "char", corpus: ["FHGP\nAction: left down right up"] },
      seed: 0,
      threads: 1,
      device: "cpu",
    });
  }, 120_000);
  afterAll(async () => {
    await engine?.close(5_000).catch(() => engine.kill());
  });

  const play = (seed: number | ((call: number) => number)) =>
    playHeldOut(cfg, makeEnv, engineGenerate(engine, cfg, false, seed), tasks, { groupSize: 4 }).then((groups) =>
      groups.flatMap((g) => g.trajectories.map((t) => t.turns.map((u) => u.action))),
    );

  it("vary their moves within an episode when each turn has its own seed", async () => {
    const episodes = await play(rolloutSeeds(cfg.seed, 0));
    expect(episodes).toHaveLength(16);
    for (const actions of episodes) {
      expect(actions.length).toBeGreaterThanOrEqual(10);
      expect(new Set(actions).size, actions.join(",")).toBeGreaterThanOrEqual(3); // near-uniform over 4 moves
    }
    // same seeds, same episodes: a rerun of a step samples exactly what it sampled before
    expect(await play(rolloutSeeds(cfg.seed, 0))).toEqual(episodes);
    expect(await play(rolloutSeeds(cfg.seed, 1))).not.toEqual(episodes);
  }, 120_000);

  it("repeat one move for most of an episode when every turn reuses one seed (the old behaviour)", async () => {
    const episodes = await play(rolloutSeeds(cfg.seed, 0)(0));
    const repeated = episodes.filter((actions) => {
      const counts = new Map<string, number>();
      for (const a of actions) counts.set(a, (counts.get(a) ?? 0) + 1);
      return Math.max(...counts.values()) >= 0.8 * actions.length;
    });
    expect(repeated.length).toBeGreaterThanOrEqual(12);
  }, 120_000);

  it("store the entropies of explored actions too: an action swapped in by exploration is scored with them", async () => {
    // epsilon 1: every action is a random admissible one, scored by the engine instead of sampled
    const groups = await playHeldOut(cfg, makeEnv, engineGenerate(engine, cfg, false, rolloutSeeds(cfg.seed, 0), 1), tasks.slice(0, 2), { groupSize: 2 });
    const turns = groups.flatMap((g) => g.trajectories.flatMap((t) => t.turns));
    expect(turns.length).toBeGreaterThan(10);
    for (const u of turns) {
      expect(u.entropies?.length).toBe(u.responseIds.length);
      for (const h of u.entropies ?? []) expect(h >= 0 && h <= Math.log(4) + 1e-5, String(h)).toBe(true); // at most 4 admissible moves
    }
    // and not all zero: the restricted distribution of an untrained policy is spread out
    expect(turns.some((u) => (u.entropies ?? []).some((h) => h > 0.1))).toBe(true);
  }, 120_000);
});
