// Properties every registered environment must have: determinism from the seed, robustness
// to any text, the Env conventions (truncation, done, rewards per player), plain ASCII.
import { describe, expect, it } from "vitest";
import { ENV_IDS, createEnv } from "../../lib/envs/registry";
import { playEpisode } from "../../lib/envs/play";
import { candidateActions, randomAction, randomPolicy } from "../../lib/envs/random-policy";
import { createRng } from "../../lib/envs/rng";

// biome-ignore lint/suspicious/noControlCharactersInRegex: the check itself: tab, newline and carriage return are the control characters allowed
const ASCII = /^[\x09\x0a\x0d\x20-\x7e]*$/;

// Text an agent might emit that no environment accepts (no bare digits: tic-tac-toe takes "5").
const GARBAGE: unknown[] = [
  "",
  "   ",
  "\n\n",
  "<action></action>",
  "<action>",
  "I am not sure what to do.",
  "search[",
  "click[]",
  "answer[]",
  "dance wildly",
  "<think>unfinished",
  "\u0000\u0001\u0002",
  "\u{1F600}\u00e9\u4e2d",
  "x".repeat(50_000),
  "[[[[]]]]((((",
  "go to the moon 99",
  "take unicorn 7 from nowhere 3",
  "8 ^ 3",
  undefined,
  null,
  42,
  { action: "left" },
];

describe.each(ENV_IDS)("%s", (id) => {
  it("is deterministic: same seed and policy seed, same episode (also after other episodes)", () => {
    const a = createEnv(id);
    const b = createEnv(id);
    for (let seed = 0; seed < 15; seed++) {
      const first = playEpisode(a, seed, randomPolicy(seed + 100));
      playEpisode(a, seed + 1000, randomPolicy(seed)); // unrelated episode in between
      const again = playEpisode(a, seed, randomPolicy(seed + 100));
      const fresh = playEpisode(b, seed, randomPolicy(seed + 100));
      expect(again).toEqual(first);
      expect(fresh).toEqual(first);
    }
  });

  it("different seeds give different tasks", () => {
    const env = createEnv(id);
    const firsts = new Set<string>();
    for (let seed = 0; seed < 30; seed++) {
      env.reset(seed);
      firsts.add(env.reset(seed) + "|" + JSON.stringify(env.view()) + "|" + env.goldAnswer());
    }
    // Tic-tac-toe starts from the empty board by default; Kuhn poker has 6 deals.
    expect(firsts.size).toBeGreaterThanOrEqual(id === "tictactoe" ? 1 : id === "kuhnpoker" ? 6 : 25);
  });

  it("never throws on arbitrary text; invalid text leaves the state unchanged", () => {
    const env = createEnv(id);
    const rng = createRng(`${id}-fuzz`);
    for (let seed = 0; seed < 20; seed++) {
      env.reset(seed);
      for (let t = 0; t < 200; t++) {
        const live = env.admissibleActions();
        const anchor = env.anchorKey();
        const agent = env.currentAgent();
        const garbage = rng.pick(GARBAGE);
        const r = env.step(garbage as string);
        expect(r.info.valid, `${JSON.stringify(garbage)?.slice(0, 40)}`).toBe(false);
        expect(r.info.success).toBe(false);
        expect(r.reward).toBe(0);
        expect(r.done).toBe(false);
        if (r.truncated) break;
        expect(env.anchorKey()).toBe(anchor);
        expect(env.admissibleActions()).toEqual(live);
        expect(env.currentAgent()).toBe(agent);
        // Then a real move, so the fuzzing visits many states.
        const real = env.step(randomAction(env, rng));
        if (real.done || real.truncated) break;
      }
    }
  });

  it("handles long pathological text in linear time", () => {
    const env = createEnv(id);
    env.reset(0);
    const nasty = [
      "?".repeat(20_000) + "x",
      " ".repeat(20_000) + "x",
      "*".repeat(20_000) + "x",
      "search[" + "a ".repeat(10_000) + "]",
      "1+".repeat(10_000) + "1",
    ];
    for (const text of nasty) {
      const t = performance.now();
      env.step(text);
      expect(performance.now() - t, text.slice(0, 12)).toBeLessThan(250);
      if (env.admissibleActions()?.length === 0) env.reset(0);
    }
  });

  it("stepping after the end answers without throwing", () => {
    const env = createEnv(id);
    const ep = playEpisode(env, 3, randomPolicy(3));
    expect(ep.turns[ep.length - 1].done || ep.truncated).toBe(true);
    const r = env.step("anything");
    expect(r.done).toBe(true);
    expect(r.info.valid).toBe(false);
  });

  it("follows the Env conventions over 100 random episodes", () => {
    const env = createEnv(id);
    expect(env.id).toBe(id);
    expect(env.instructions()).toMatch(ASCII);
    expect(env.instructions().length).toBeGreaterThan(50);
    for (let seed = 0; seed < 100; seed++) {
      const ep = playEpisode(env, seed, randomPolicy(seed));
      expect(ep.length).toBeLessThanOrEqual(env.maxTurns);
      expect(ep.length).toBe(ep.turns.length);
      // done and truncated are exclusive; truncation only at maxTurns.
      const last = ep.turns[ep.length - 1];
      expect(last.done && ep.truncated).toBe(false);
      if (ep.truncated) expect(ep.length).toBe(env.maxTurns);
      else expect(last.done).toBe(true);
      expect(ep.turns.slice(0, -1).every((t) => !t.done)).toBe(true);
      expect(ep.turns.slice(0, -1).every((t) => !t.info.success)).toBe(true);
      if (ep.success) expect(last.done).toBe(true);
      for (const t of ep.turns) {
        expect(t.observation).toMatch(ASCII);
        expect(t.anchor.length).toBeGreaterThan(0);
        expect(Number.isFinite(t.reward)).toBe(true);
        expect(() => JSON.stringify(t.info)).not.toThrow();
        expect(t.view).toBeDefined();
        if (t.valid) expect(t.info.action).not.toBeNull();
      }
      if (env.numAgents === 2) {
        for (const t of ep.turns) {
          expect(t.rewards).toHaveLength(2);
          expect(t.reward).toBe(t.rewards![t.agent]);
          expect(t.rewards![0] + t.rewards![1]).toBe(0); // both games are zero-sum
        }
      } else {
        expect(env.currentAgent()).toBeNull();
        expect(ep.turns.every((t) => t.agent === 0 && t.rewards === undefined)).toBe(true);
      }
      for (const a of candidateActions(env)) expect(a).toMatch(ASCII);
    }
  });

  it("every candidate action of the random policy is accepted as valid", () => {
    const env = createEnv(id);
    const rng = createRng(`${id}-valid`);
    let checked = 0;
    for (let seed = 0; seed < 30; seed++) {
      env.reset(seed);
      for (let t = 0; t < env.maxTurns; t++) {
        const action = randomAction(env, rng);
        const r = env.step(action);
        expect(r.info.valid, `${id} seed ${seed}: ${action}`).toBe(true);
        checked++;
        if (r.done || r.truncated) break;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });
});
