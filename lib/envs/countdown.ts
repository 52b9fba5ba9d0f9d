// 24 points (GTR's Points24, after RL4VLM's gym-cards) and Countdown (TinyZero): reach the
// target from the given numbers with + - * /, using every number exactly once.
// Multi-turn form: each turn combines two numbers into their result ("8 * 3"), so the
// action set is finite and equal number multisets are equal anchor states. An agent may
// instead submit a whole expression over the remaining numbers ("(8 - 4) * (3 + 3)"), which
// ends the episode. Step results stay positive integers (Countdown's rules); a submitted
// expression is evaluated exactly with fractions.
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { extractAction, parseCommand } from "./parse-action";
import { createRng, mixSeed } from "./rng";
import type { EnvSpec, EnvView } from "./types";

export const countdownConfigSchema = z.strictObject({
  numCount: z.number().int().min(2).max(6).default(4).describe("How many numbers are dealt (4 for 24 points)."),
  maxNumber: z.number().int().min(2).max(100).default(13).describe("Numbers are drawn uniformly from 1..maxNumber (13: a card deck)."),
  target: z.number().int().min(1).max(10_000).default(24).describe("The fixed target (24 points); ignored when randomTarget is on."),
  randomTarget: z.boolean().default(false).describe("Countdown mode: the target is the result of a random combination of the numbers (between 10 and 1000)."),
  maxTurns: z.number().int().min(1).max(100).default(6).describe("Turns before the episode is truncated (numCount - 1 combinations solve it)."),
});
export type CountdownConfig = z.infer<typeof countdownConfigSchema>;

type Op = "+" | "-" | "*" | "/";

/** The combinations allowed on a multiset: results are positive integers. Canonical text "a op b" with a >= b. */
export function countdownSteps(numbers: readonly number[]): { text: string; a: number; b: number; op: Op; result: number }[] {
  const out: { text: string; a: number; b: number; op: Op; result: number }[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < numbers.length; i++)
    for (let j = i + 1; j < numbers.length; j++) {
      const a = Math.max(numbers[i], numbers[j]);
      const b = Math.min(numbers[i], numbers[j]);
      const cands: [Op, number][] = [
        ["+", a + b],
        ["*", a * b],
      ];
      if (a > b) cands.push(["-", a - b]);
      if (b > 0 && a % b === 0) cands.push(["/", a / b]);
      for (const [op, result] of cands) {
        const text = `${a} ${op} ${b}`;
        if (!seen.has(text)) {
          seen.add(text);
          out.push({ text, a, b, op, result });
        }
      }
    }
  return out;
}

/** Removes one a and one b from the multiset and adds the result (sorted descending). */
function applyStep(numbers: readonly number[], a: number, b: number, result: number): number[] {
  const rest = numbers.slice();
  rest.splice(rest.indexOf(a), 1);
  rest.splice(rest.indexOf(b), 1);
  rest.push(result);
  return rest.sort((x, y) => y - x);
}

/** Depth-first search for a sequence of steps reaching the target; null when none exists. */
export function solveCountdown(numbers: readonly number[], target: number): string[] | null {
  const dead = new Set<string>();
  const search = (nums: number[]): string[] | null => {
    if (nums.length === 1) return nums[0] === target ? [] : null;
    const key = nums.join(",");
    if (dead.has(key)) return null;
    for (const s of countdownSteps(nums)) {
      const rest = search(applyStep(nums, s.a, s.b, s.result));
      if (rest) return [s.text, ...rest];
    }
    dead.add(key);
    return null;
  };
  return search(numbers.slice().sort((x, y) => y - x));
}

/** One expression equal to the target built from solver steps, e.g. "(8 - 4) * (3 + 3)". */
export function stepsToExpression(numbers: readonly number[], steps: readonly string[]): string {
  const pool: { value: number; text: string }[] = numbers.map((n) => ({ value: n, text: String(n) }));
  for (const step of steps) {
    const [as, op, bs] = step.split(" ");
    const take = (v: number) =>
      pool.splice(
        pool.findIndex((p) => p.value === v),
        1,
      )[0];
    const a = take(Number(as));
    const b = take(Number(bs));
    const result = op === "+" ? a.value + b.value : op === "-" ? a.value - b.value : op === "*" ? a.value * b.value : a.value / b.value;
    pool.push({ value: result, text: `(${a.text} ${op} ${b.text})` });
  }
  const t = pool[0]?.text ?? "";
  return t.startsWith("(") && t.endsWith(")") ? t.slice(1, -1) : t;
}

export interface CountdownState {
  numbers: number[];
  target: number;
  start: number[];
}

export class CountdownEnv extends BaseEnv {
  readonly id = "countdown";
  private numbers: number[] = [];
  private start: number[] = [];
  private target = 24;
  private solution: string[] = [];

  constructor(readonly config: CountdownConfig) {
    super(config.maxTurns);
  }

  get state(): CountdownState {
    return { numbers: this.numbers.slice(), target: this.target, start: this.start.slice() };
  }

  protected onReset(seed: number): string {
    const { numCount, maxNumber, randomTarget } = this.config;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 10_000) throw new Error("countdown: no solvable instance found; raise maxNumber or numCount");
      const rng = createRng(mixSeed("countdown", seed, attempt));
      const nums = Array.from({ length: numCount }, () => rng.range(1, maxNumber)).sort((x, y) => y - x);
      let target = this.config.target;
      if (randomTarget) {
        // A random play-out defines a reachable target (TinyZero's Countdown generator idea).
        let cur = nums.slice();
        while (cur.length > 1) {
          const s = rng.pick(countdownSteps(cur));
          cur = applyStep(cur, s.a, s.b, s.result);
        }
        target = cur[0];
        if (target < 10 || target > 1000) continue;
      }
      const solution = solveCountdown(nums, target);
      if (solution) {
        this.numbers = nums;
        this.start = nums.slice();
        this.target = target;
        this.solution = solution;
        return this.render("");
      }
    }
  }

  protected onStep(actionText: string): TurnOutcome {
    // Exactly two kinds of action are admissible: a listed combination ("8 * 3"), or an answer
    // (answer[...] / <answer>...</answer>) holding a whole expression over exactly the current
    // numbers, which always ends the episode. Anything else, a bare expression or an answer
    // over other numbers included, is an invalid action (state unchanged).
    const answer = parseCommand(actionText, ["answer"]);
    if (answer) {
      const expr = parseExpression(answer.arg.replace(/=.*$/s, "").trim());
      if (!expr || !sameMultiset(expr.numbers, this.numbers)) return this.invalidOutcome();
      const success = expr.value !== null && expr.value.n === this.target * expr.value.d;
      const shown = expr.value === null ? "undefined" : expr.value.d === 1 ? String(expr.value.n) : `${expr.value.n}/${expr.value.d}`;
      return {
        observation: `${expr.canonical} = ${shown}. ${success ? "Correct!" : `That is not ${this.target}.`}`,
        reward: success ? 1 : 0,
        done: true,
        info: { valid: true, success, action: `answer[${expr.canonical}]`, result: shown },
      };
    }
    const step = this.matchStep(extractAction(actionText).replace(/=.*$/s, "").trim());
    if (!step) return this.invalidOutcome();
    this.numbers = applyStep(this.numbers, step.a, step.b, step.result);
    const done = this.numbers.length === 1;
    const success = done && this.numbers[0] === this.target;
    return {
      observation: this.render(`${step.text} = ${step.result}.`),
      reward: success ? 1 : 0,
      done,
      info: { valid: true, success, action: step.text, result: step.result },
    };
  }

  private invalidOutcome(): TurnOutcome {
    return {
      observation: this.render(
        "Invalid action: combine two of the numbers, e.g. " +
          `"${countdownSteps(this.numbers)[0]?.text ?? ""}", or answer[expression] using every current number once.`,
      ),
      reward: 0,
      done: false,
      info: invalidInfo(),
    };
  }

  private matchStep(text: string) {
    const m = text
      .toLowerCase()
      .replace(/\s+/g, " ")
      .match(/^\(?\s*(\d+)\s*([-+*/x]|times|plus|minus|divided by)\s*(\d+)\s*\)?\.?$/);
    if (!m) return null;
    const opWord: Record<string, Op> = { "+": "+", plus: "+", "-": "-", minus: "-", "*": "*", x: "*", times: "*", "/": "/", "divided by": "/" };
    const op = opWord[m[2]];
    let a = Number(m[1]);
    let b = Number(m[3]);
    if ((op === "+" || op === "*") && b > a) [a, b] = [b, a];
    return countdownSteps(this.numbers).find((s) => s.op === op && s.a === a && s.b === b) ?? null;
  }

  admissibleActions(): string[] {
    return countdownSteps(this.numbers).map((s) => s.text);
  }

  goldAnswer(): string {
    return stepsToExpression(this.start, this.solution);
  }

  instructions(): string {
    return [
      `Reach the target number using each of the given numbers exactly once with + - * and /.`,
      `Each turn, combine two of the current numbers, larger first, e.g. <action>8 * 3</action>; the two numbers are replaced by the result.`,
      `Results must be positive whole numbers. When one number is left the episode ends: reward 1 if it equals the target.`,
      `You may instead answer with a whole expression over the current numbers, e.g. <answer>(8 - 4) * (3 + 3)</answer>, which ends the episode.`,
    ].join("\n");
  }

  view(): EnvView {
    return { kind: "fields", fields: { numbers: this.numbers.join(" "), target: this.target, start: this.start.join(" ") } };
  }

  /** The puzzle: the multiset of starting numbers and the target (order of dealing ignored). */
  protected instanceState(): AnchorValue {
    return { numbers: this.start.slice().sort((a, b) => a - b), target: this.target };
  }

  protected anchorState(): AnchorValue {
    return { numbers: this.numbers, target: this.target };
  }

  private render(prefix: string): string {
    return `${prefix ? prefix + "\n" : ""}Numbers: ${this.numbers.join(" ")}\nTarget: ${this.target}`;
  }
}

function sameMultiset(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  const x = a.slice().sort((p, q) => p - q);
  const y = b.slice().sort((p, q) => p - q);
  return x.every((v, i) => v === y[i]);
}

// ---------------------------------------------------------------------------------------
// Exact expression evaluation over fractions (24 points accepts 8 / (3 - 8 / 3)).

interface Frac {
  n: number;
  d: number;
}

function frac(n: number, d: number): Frac | null {
  if (d === 0) return null;
  const g = gcd(Math.abs(n), Math.abs(d)) || 1;
  const s = d < 0 ? -1 : 1;
  return { n: (s * n) / g, d: (s * d) / g };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Parses + - * / ( ) over non-negative integers; value null on division by zero. Null when malformed. */
export function parseExpression(text: string): { value: Frac | null; numbers: number[]; canonical: string } | null {
  const src = text.replace(/[x\u00d7]/gi, "*").replace(/\u00f7/g, "/");
  const tokens = src.match(/\d+|[-+*/()]|\S/g);
  if (!tokens || tokens.length > 200) return null;
  let pos = 0;
  const numbers: number[] = [];
  const peek = () => tokens[pos];
  type R = { v: Frac | null; t: string } | undefined;
  const primary = (): R => {
    const tok = tokens[pos++];
    if (tok === undefined) return undefined;
    if (/^\d+$/.test(tok)) {
      numbers.push(Number(tok));
      return { v: frac(Number(tok), 1), t: tok };
    }
    if (tok === "(") {
      const inner = sum();
      if (!inner || tokens[pos++] !== ")") return undefined;
      return { v: inner.v, t: `(${inner.t})` };
    }
    return undefined;
  };
  const product = (): R => {
    let left = primary();
    while (left && (peek() === "*" || peek() === "/")) {
      const op = tokens[pos++];
      const right = primary();
      if (!right) return undefined;
      const v = left.v && right.v ? (op === "*" ? frac(left.v.n * right.v.n, left.v.d * right.v.d) : frac(left.v.n * right.v.d, left.v.d * right.v.n)) : null;
      left = { v, t: `${left.t} ${op} ${right.t}` };
    }
    return left;
  };
  const sum = (): R => {
    let left = product();
    while (left && (peek() === "+" || peek() === "-")) {
      const op = tokens[pos++];
      const right = product();
      if (!right) return undefined;
      const v =
        left.v && right.v
          ? frac(op === "+" ? left.v.n * right.v.d + right.v.n * left.v.d : left.v.n * right.v.d - right.v.n * left.v.d, left.v.d * right.v.d)
          : null;
      left = { v, t: `${left.t} ${op} ${right.t}` };
    }
    return left;
  };
  const result = sum();
  if (!result || pos !== tokens.length) return null;
  return { value: result.v, numbers, canonical: result.t };
}

export const countdownSpec: EnvSpec<CountdownConfig> = {
  id: "countdown",
  title: "24 points / Countdown",
  description:
    "Combine the dealt numbers with + - * / to hit the target (24 points as in GTR, or a random Countdown target). One combination per turn, or a whole expression. Reward 1 on success.",
  configSchema: countdownConfigSchema,
  create: (config) => new CountdownEnv(config),
};
