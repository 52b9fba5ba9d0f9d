// The fast rollout-step check (rolloutStepFast) agrees with rolloutStepInputSchema: it accepts
// only what the schema accepts, and gives the very object the schema gives (defaults filled, keys
// in the same order), so the stored rows and the idempotency hash do not depend on which path ran.
import { describe, expect, it } from "vitest";
import { rolloutStepFast, rolloutStepInputSchema, rolloutStepsBatchFast, rolloutStepsBatchSchema } from "@/lib/schemas/rollouts";

let seed = 23;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
const maybe = (p: number) => rand() < p;

function turn(): Record<string, unknown> {
  const t: Record<string, unknown> = { observation: pick(["o", "", "obs ü"]), action: pick(["a", "left"]), reward: rand() * 2 - 1 };
  if (maybe(0.3)) t.valid = maybe(0.5);
  if (maybe(0.3)) t.done = maybe(0.5);
  if (maybe(0.4)) t.anchor = pick([null, "s1", ""]);
  if (maybe(0.2)) t.agent = pick([null, 0, 3, 64]);
  if (maybe(0.2)) t.tokenCount = pick([null, 0, 12]);
  for (const k of ["logprob", "entropy", "advantage"]) if (maybe(0.3)) t[k] = maybe(0.2) ? null : rand() - 0.5;
  if (maybe(0.2)) t.info = pick([null, {}, { k: 1, s: [1, "x"] }]);
  if (maybe(0.2)) {
    const n = Math.floor(rand() * 4);
    t.tokenIds = Array.from({ length: n }, () => Math.floor(rand() * 1000));
    if (maybe(0.5)) t.tokenTexts = Array.from({ length: n }, () => "t");
    if (maybe(0.5)) t.tokenLogprobs = Array.from({ length: n }, () => -rand());
    if (maybe(0.3)) t.tokenAdvantages = Array.from({ length: n }, () => rand());
    if (maybe(0.3)) t.tokenEntropies = maybe(0.3) ? null : Array.from({ length: n }, () => rand());
  }
  return t;
}

function validBody(): Record<string, unknown> {
  const groups = Array.from({ length: 1 + Math.floor(rand() * 3) }, (_, g) => {
    const grp: Record<string, unknown> = {
      uid: `u${g}`,
      envId: "env",
      trajectories: Array.from({ length: 1 + Math.floor(rand() * 3) }, () => {
        const tr: Record<string, unknown> = { turns: Array.from({ length: 1 + Math.floor(rand() * 3) }, turn) };
        if (maybe(0.3)) tr.reward = rand();
        if (maybe(0.3)) tr.success = maybe(0.5);
        if (maybe(0.3)) tr.truncated = maybe(0.5);
        return tr;
      }),
    };
    if (maybe(0.5)) grp.taskSeed = Math.floor(rand() * 100) - 50;
    return grp;
  });
  const b: Record<string, unknown> = { step: Math.floor(rand() * 100), groups };
  if (maybe(0.3)) b.estimator = pick([null, "gigpo"]);
  if (maybe(0.2)) b.params = pick([null, { a: 1 }]);
  if (maybe(0.2)) b.diagnostics = pick([null, { d: [1] }]);
  if (maybe(0.3)) b.batchId = "s:1";
  return b;
}

const BAD = [-1, 1.5, 2 ** 31, 2 ** 53, "3", null, true, Infinity, NaN, {}, [], "x".repeat(201), "", 0, 65, undefined];

/** One random defect (or none) somewhere in the body. */
function mutate(b: Record<string, unknown>): Record<string, unknown> {
  const c = structuredClone(b) as {
    groups: { trajectories: { turns: Record<string, unknown>[]; [k: string]: unknown }[]; [k: string]: unknown }[];
    [k: string]: unknown;
  };
  const g = pick(c.groups);
  const tr = pick(g.trajectories);
  const t = pick(tr.turns);
  const turnKey = pick([
    "observation",
    "action",
    "reward",
    "valid",
    "done",
    "anchor",
    "agent",
    "tokenCount",
    "logprob",
    "entropy",
    "advantage",
    "info",
    "tokenIds",
    "tokenTexts",
    "tokenLogprobs",
    "tokenAdvantages",
    "tokenEntropies",
    "extra",
  ]);
  switch (Math.floor(rand() * 12)) {
    case 0:
      t[turnKey] = pick(BAD);
      break;
    case 1:
      t[turnKey] = pick([[1, 2], ["a"], [1.5], [null], [2 ** 31]]);
      break;
    case 2:
      delete t[pick(["observation", "action", "reward", "tokenIds"])];
      break;
    case 3:
      tr[pick(["reward", "success", "truncated", "turns", "x"])] = pick(BAD);
      break;
    case 4:
      g[pick(["uid", "envId", "taskSeed", "trajectories", "x"])] = pick(BAD);
      break;
    case 5:
      c[pick(["step", "estimator", "params", "diagnostics", "groups", "batchId", "x"])] = pick(BAD);
      break;
    case 6:
      c.groups.push(structuredClone(c.groups[0]));
      break; // a duplicate uid
    case 7:
      tr.turns = [];
      break;
    case 8:
      t.observation = "o".repeat(200_001);
      break;
    case 9:
      t.anchor = "a".repeat(10_001);
      break;
    default:
      break;
  }
  return JSON.parse(JSON.stringify(c)); // what arrives is JSON (undefined keys dropped, NaN -> null)
}

describe("rolloutStepFast", () => {
  it("accepts only what rolloutStepInputSchema accepts and gives the same object (3,000 random bodies, half with a defect)", () => {
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const body = i % 2 ? mutate(validBody()) : validBody();
      const fast = rolloutStepFast(body);
      const schema = rolloutStepInputSchema.safeParse(body);
      expect(fast !== null, JSON.stringify(body).slice(0, 2000)).toBe(schema.success);
      if (fast) {
        accepted++;
        expect(JSON.stringify(fast)).toBe(JSON.stringify(schema.data)); // key order too: the content hash is of this
      }
    }
    expect(accepted).toBeGreaterThan(1500); // the valid half at least, so the agreement is not vacuous
  });

  it("leaves a body it does not accept to the schema, which names the field", () => {
    const body = {
      step: 1,
      groups: [
        {
          uid: "g",
          envId: "e",
          trajectories: [
            {
              turns: [
                { observation: "o", action: "a", reward: 1 },
                { observation: "o", action: "a", reward: "x" },
              ],
            },
          ],
        },
      ],
    };
    expect(rolloutStepFast(body)).toBeNull();
    const r = rolloutStepInputSchema.safeParse(body);
    expect(r.success ? [] : r.error.issues.map((i) => i.path.join("."))).toEqual(["groups.0.trajectories.0.turns.1.reward"]);
  });
});

describe("rolloutStepsBatchFast", () => {
  it("accepts only what rolloutStepsBatchSchema accepts and gives the same object (1,000 random batches, one step in three with a defect)", () => {
    let accepted = 0;
    for (let i = 0; i < 1000; i++) {
      const steps = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => (maybe(1 / 3) ? mutate(validBody()) : validBody()));
      const body: unknown = maybe(0.05) ? pick([{ steps: [] }, { steps, x: 1 }, { steps: {} }, steps]) : { steps };
      const fast = rolloutStepsBatchFast(body);
      const schema = rolloutStepsBatchSchema.safeParse(body);
      expect(fast !== null, JSON.stringify(body).slice(0, 2000)).toBe(schema.success);
      if (fast) {
        accepted++;
        expect(JSON.stringify(fast)).toBe(JSON.stringify(schema.data));
      }
    }
    expect(accepted).toBeGreaterThan(150);
  });

  it("names the refused field with the step's index", () => {
    const good = { step: 1, groups: [{ uid: "g", envId: "e", trajectories: [{ turns: [{ observation: "o", action: "a", reward: 1 }] }] }] };
    const body = {
      steps: [good, { ...good, step: 2, groups: [{ ...good.groups[0], trajectories: [{ turns: [{ observation: "o", action: "a", reward: "x" }] }] }] }],
    };
    expect(rolloutStepsBatchFast(body)).toBeNull();
    const r = rolloutStepsBatchSchema.safeParse(body);
    expect(r.success ? [] : r.error.issues.map((i) => i.path.join("."))).toEqual(["steps.1.groups.0.trajectories.0.turns.0.reward"]);
  });
});
