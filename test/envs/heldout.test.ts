// Held-out evaluation is instance-disjoint from training (lib/envs/heldout.ts): for every
// environment, no instance a default-sized training run draws (200 steps x 16 tasks) is among
// the evaluation instances, and instance keys tell instances apart (equal iff same instance).
import { describe, expect, it } from "vitest";
import { ENV_IDS, createEnv } from "../../lib/envs/registry";
import {
  EVAL_SEED_BASE,
  HELD_OUT_RESERVE,
  estimateSpace,
  evalTasks,
  heldOutSet,
  instanceKeyOf,
  overlapCount,
  trainTask,
  trainingInstances,
} from "../../lib/envs/heldout";
import { mixSeed } from "../../lib/envs/rng";
import { trainConfigSchema } from "../../lib/schemas/train";

const defaults = trainConfigSchema.parse({});
const STEPS = defaults.steps; // 200
const TASKS = defaults.groupsPerStep; // 16

// Every environment at its default config, plus the configs where the old seed-only split
// overlapped most (4x4 FrozenLake: 174 of 200 held-out maps were training maps).
const CASES: [string, Record<string, unknown>][] = [
  ...ENV_IDS.filter((id) => id !== "tictactoe").map((id): [string, Record<string, unknown>] => [id, {}]),
  ["tictactoe", { randomOpeningMoves: 3 }],
  ["frozenlake", { size: 4 }],
  ["sokoban", { minSolutionMoves: 0 }],
];

describe("held-out sets are instance-disjoint from training", () => {
  for (const [id, config] of CASES) {
    it(`${id} ${JSON.stringify(config)}: 0 of the evaluation instances among ${STEPS} x ${TASKS} training draws`, () => {
      const set = heldOutSet(id, config, defaults.evalEpisodes);
      expect(set.disjoint).toBe(true);
      const evalSet = evalTasks(set, defaults.evalEpisodes);
      // Distinct instances, from evaluation seeds.
      expect(new Set(evalSet.map((t) => t.key)).size).toBe(evalSet.length);
      for (const t of evalSet) expect(t.seed).toBeGreaterThanOrEqual(EVAL_SEED_BASE);
      const trained = trainingInstances(id, config, set, 0, STEPS, TASKS);
      expect(trained.size).toBeGreaterThan(0);
      expect(
        overlapCount(
          evalSet.map((t) => t.key),
          trained,
        ),
      ).toBe(0);
      // Not just the evaluated prefix: nothing reserved is ever drawn.
      for (const k of trained) expect(set.reserved.has(k)).toBe(false);
    });
  }

  it("the seed-only split did overlap (the bug this guards against): 4x4 FrozenLake", () => {
    const env = createEnv("frozenlake", { size: 4 });
    const evalKeys = Array.from({ length: 200 }, (_, i) => instanceKeyOf(env, EVAL_SEED_BASE + i));
    const oldTrain = new Set<string>();
    for (let step = 0; step < STEPS; step++) for (let g = 0; g < TASKS; g++) oldTrain.add(instanceKeyOf(env, mixSeed(0, "train", step, g) % EVAL_SEED_BASE));
    expect(overlapCount(evalKeys, oldTrain)).toBeGreaterThan(100);
  });

  it("small instance spaces hold out half and train on the rest; a single instance is reported as not disjoint", () => {
    // The space estimate inverts the expected distinct count of uniform draws.
    expect(estimateSpace(1000, 1000)).toBeNull();
    expect(estimateSpace(100_000, 6)).toBe(6);
    const n = 5000;
    expect(Math.abs(estimateSpace(n, Math.round(1e4 * -Math.expm1(-n / 1e4)))! - 1e4)).toBeLessThan(30);
    const kuhn = heldOutSet("kuhnpoker", {}, 200); // 6 deals
    expect(kuhn.distinctSeen).toBe(6);
    expect(kuhn.reserved.size).toBe(3);
    const trained = trainingInstances("kuhnpoker", {}, kuhn, 0, 20, 4);
    expect(trained.size).toBe(3);
    expect(overlapCount(kuhn.keys, trained)).toBe(0);

    // Countdown has ~1,350 puzzles: the reserve of 1,000 would leave training a quarter; half is held out.
    const cd = heldOutSet("countdown", {}, 200);
    const space = estimateSpace(cd.scanned, cd.distinctSeen)!;
    expect(space).toBeGreaterThan(1000);
    expect(space).toBeLessThan(2000);
    expect(cd.reserved.size).toBe(Math.floor(space / 2));

    const ttt = heldOutSet("tictactoe", { randomOpeningMoves: 0 }, 200);
    expect(ttt.disjoint).toBe(false);
    expect(ttt.seeds).toHaveLength(1);
    const tttTrained = trainingInstances("tictactoe", { randomOpeningMoves: 0 }, ttt, 0, 2, 2);
    expect(overlapCount(ttt.keys, tttTrained)).toBe(1); // measured and reported, not hidden
  });

  it("the held-out set is large enough for any evaluation up to its reserve, and deterministic", () => {
    const a = heldOutSet("sokoban", { width: 7, height: 7 }, 10);
    expect(a.seeds.length).toBe(HELD_OUT_RESERVE);
    const b = heldOutSet("sokoban", { height: 7, width: 7 }, 0); // same config, other key order: cached, same set
    expect(b.keys).toEqual(a.keys);
  });

  it("training draws are deterministic (resume replays them) and redraw only held-out instances", () => {
    const set = heldOutSet("frozenlake", { size: 4 }, 200);
    const env = createEnv("frozenlake", { size: 4 });
    let redrawn = 0;
    for (let step = 0; step < 50; step++)
      for (let g = 0; g < TASKS; g++) {
        const t = trainTask(env, set, 7, step, g);
        expect(trainTask(env, set, 7, step, g)).toEqual(t);
        const first = mixSeed(7, "train", step, g) % EVAL_SEED_BASE;
        if (t.seed !== first) {
          redrawn++;
          expect(set.reserved.has(instanceKeyOf(env, first))).toBe(true);
        } else expect(set.reserved.has(t.key)).toBe(false);
      }
    expect(redrawn).toBeGreaterThan(0);
  });
});

describe("instance keys", () => {
  // Injective where it must be: two seeds get the same key only if they generate the same
  // instance, judged here by an independent fingerprint of what reset produced (the first
  // observation, the researcher's view and the gold answer).
  const fingerprint = (env: ReturnType<typeof createEnv>, seed: number) => {
    const obs = env.reset(seed);
    const view = JSON.stringify(env.view());
    // Shop's gold answer names the product the goal was drawn from; any product meeting the
    // same instruction earns the same reward, so the instance is the instruction.
    const gold = env.id === "shop" ? "" : env.goldAnswer();
    return `${obs}\u0000${view}\u0000${gold}`;
  };
  for (const [id, config] of CASES) {
    it(`${id} ${JSON.stringify(config)}: same key iff same instance on 1,500 seeds; keys ignore the seed and the episode so far`, () => {
      const env = createEnv(id, config);
      const byKey = new Map<string, string>();
      const byPrint = new Map<string, string>();
      for (let seed = 0; seed < 1500; seed++) {
        const print = fingerprint(env, seed);
        const key = env.instanceKey();
        if (byKey.has(key)) expect(byKey.get(key), `seed ${seed}: same key, different instance`).toBe(print);
        byKey.set(key, print);
        if (byPrint.has(print)) expect(byPrint.get(print), `seed ${seed}: same instance, different key`).toBe(key);
        byPrint.set(print, key);
      }
      // The key is fixed at reset: playing on does not change it.
      env.reset(3);
      const key = env.instanceKey();
      const actions = env.admissibleActions();
      env.step(actions?.[0] ?? "search[a]");
      expect(env.instanceKey()).toBe(key);
      expect(instanceKeyOf(createEnv(id, config), 3)).toBe(key);
    });
  }

  it("kuhnpoker, countdown, twentyq: keys identify the instance, not how it is shown", () => {
    // Kuhn poker: the key is the deal, and each player's view shows one card, so equal keys
    // mean equal deals; the researcher view (both cards) must match then.
    const kuhn = createEnv("kuhnpoker");
    const deals = new Map<string, string>();
    for (let seed = 0; seed < 300; seed++) {
      kuhn.reset(seed);
      const cards = JSON.stringify(kuhn.view());
      const k = kuhn.instanceKey();
      if (deals.has(k)) expect(deals.get(k)).toBe(cards);
      deals.set(k, cards);
    }
    expect(deals.size).toBe(6);
    // Countdown: the same multiset and target is one puzzle, dealt in any order.
    const cd = createEnv("countdown");
    const puzzles = new Map<string, string>();
    for (let seed = 0; seed < 1500; seed++) {
      cd.reset(seed);
      const v = cd.view();
      if (v.kind !== "fields") throw new Error("countdown view is not fields");
      const puzzle = `${String(v.fields.start)
        .split(" ")
        .map(Number)
        .sort((a, b) => a - b)
        .join(" ")} -> ${v.fields.target}`;
      const k = cd.instanceKey();
      if (puzzles.has(k)) expect(puzzles.get(k)).toBe(puzzle);
      puzzles.set(k, puzzle);
    }
    expect(new Set(puzzles.values()).size).toBe(puzzles.size);
  });
});
