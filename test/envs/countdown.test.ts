// Countdown accepts exactly its admissible actions: a listed two-number combination, or an answer
// (a whole expression over exactly the current numbers) which always ends the episode.
import { describe, expect, it } from "vitest";
import { CountdownEnv, countdownConfigSchema, countdownSteps } from "../../lib/envs/countdown";

/** An env at a given deal, reached by stepping the solver's combinations from a seeded reset. */
function envAt(config: Record<string, unknown> = {}, seed = 3): CountdownEnv {
  const env = new CountdownEnv(countdownConfigSchema.parse(config));
  env.reset(seed);
  return env;
}

describe("countdown actions", () => {
  it("a bare expression over the last two numbers that is no listed combination is invalid, not the end", () => {
    const env = envAt();
    // play combinations until two numbers are left
    while (env.state.numbers.length > 2) env.step(env.admissibleActions()[0]);
    const [a, b] = env.state.numbers;
    const listed = new Set(env.admissibleActions());
    const bare = [`${a} / ${b}`, `${b} / ${a}`, `${b} - ${a}`].find((t) => !listed.has(t))!;
    expect(bare).toBeDefined();
    const before = env.state;
    const r = env.step(bare);
    expect(r).toMatchObject({ done: false, reward: 0, info: { valid: false } });
    expect(env.state).toEqual(before);
    // the same text as an answer is admissible and ends the episode
    const ans = env.step(`answer[${bare}]`);
    expect(ans.done).toBe(true);
    expect(ans.info.valid).toBe(true);
  });

  it("an answer with a two-number expression while more numbers remain is invalid and changes nothing", () => {
    const env = envAt({ numCount: 4 });
    const step = env.admissibleActions()[0];
    const before = env.state;
    const r = env.step(`answer[${step}]`);
    expect(r).toMatchObject({ done: false, reward: 0, info: { valid: false } });
    expect(env.state).toEqual(before);
    // as a plain action the combination is an ordinary step
    expect(env.step(step)).toMatchObject({ done: false, info: { valid: true } });
    expect(env.state.numbers).toHaveLength(3);
  });

  it("every admissible combination is accepted, and any answer over exactly the current numbers ends the episode", () => {
    for (let seed = 0; seed < 15; seed++) {
      const env = envAt({ numCount: 4 }, seed);
      for (const a of env.admissibleActions()) {
        const e = envAt({ numCount: 4 }, seed);
        expect(e.step(a).info.valid, `${seed}: ${a}`).toBe(true);
      }
      const nums = env.state.numbers;
      const r = env.step(`<answer>${nums.join(" + ")}</answer>`);
      const sum = nums.reduce((x, y) => x + y, 0);
      expect(r).toMatchObject({ done: true, info: { valid: true }, reward: sum === env.state.target ? 1 : 0 });
    }
  });

  it("a combination that is not listed (non-integer or non-positive result, absent number) is invalid", () => {
    const env = envAt();
    const nums = env.state.numbers;
    const absent = Math.max(...nums) + 7;
    for (const text of [`${absent} + ${nums[0]}`, `${nums[nums.length - 1]} - ${nums[0]}`, "hello", "answer[]", `answer[${absent}]`]) {
      if (countdownSteps(nums).some((s) => s.text === text)) continue;
      const r = env.step(text);
      expect(r.info.valid, text).toBe(false);
      expect(r.done, text).toBe(false);
      expect(env.state.numbers).toEqual(nums);
    }
  });
});
