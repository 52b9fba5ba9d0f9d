// Credit over training from per-step summaries (lib/db/credit-summary.ts): the summary written with
// a step, and the one made on first read of a step stored without it, both give the answer a
// brute-force pass over the step inputs gives; turn entropy is derived from stored token entropies.
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import { creditGroups, gigpoStep } from "./fixtures";
import type { RolloutStepInput } from "@/lib/schemas/rollouts";

useTempDatabase("credit-summary");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep } = await import("@/lib/db/rollouts");
const { summarizeStepInput } = await import("@/lib/schemas/step-summary");
const { countRows, forgetStepSummaries } = await import("../helpers/db-inspect");
const { creditOverview } = await import("@/lib/runs/credit-views");
const { rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");
const { runCredit } = await import("@/lib/credit");

const newRun = (name: string) =>
  createRun({ project: "t", name, kind: "imported", jobKind: null, config: {}, envId: "frozenlake", estimator: "gigpo", status: "running" }).runId;
const summaries = (runId: string) => countRows("StepCreditSummary", runId);

// 5 steps of 4 groups x 5 trajectories of up to 9 turns (ragged lengths), stored GiGPO advantages
const steps: RolloutStepInput[] = [0, 1, 2, 3, 4].map((s) => gigpoStep(s, { groups: 4, G: 5, maxTurns: 9, seed: 3 }));

/** Credit over training computed the slow, obvious way from the step inputs. */
function bruteForce(step: RolloutStepInput) {
  const byTurn: number[][] = [];
  const all: number[] = [];
  for (const g of step.groups)
    for (const t of g.trajectories)
      t.turns.forEach((u, i) => {
        const a = u.advantage;
        if (a === null || a === undefined) return;
        byTurn[i] ??= [];
        byTurn[i].push(a);
        all.push(a);
      });
  const mean = all.reduce((x, y) => x + y, 0) / all.length;
  const std = Math.sqrt(all.reduce((x, y) => x + (y - mean) ** 2, 0) / (all.length - 1));
  // groups whose trajectories all score the same (score = sum of rewards here)
  const multi = step.groups.filter((g) => g.trajectories.length > 1);
  const score = (t: RolloutStepInput["groups"][number]["trajectories"][number]) => t.turns.reduce((x, u) => x + u.reward, 0);
  const zero = multi.filter((g) => g.trajectories.every((t) => score(t) === score(g.trajectories[0]))).length;
  // anchor groups: turns of one task group with the same anchor
  const anchorGroups = new Map<string, number>();
  for (const g of step.groups)
    for (const t of g.trajectories)
      for (const u of t.turns) anchorGroups.set(`${g.uid}\u0000${u.anchor}`, (anchorGroups.get(`${g.uid}\u0000${u.anchor}`) ?? 0) + 1);
  const singles = [...anchorGroups.values()].filter((n) => n === 1).length;
  return {
    mean: byTurn.map((xs) => xs.reduce((x, y) => x + y, 0) / xs.length),
    meanAbs: byTurn.map((xs) => xs.reduce((x, y) => x + Math.abs(y), 0) / xs.length),
    count: byTurn.map((xs) => xs.length),
    advMean: mean,
    advStd: std,
    nonZeroShare: all.filter((a) => Math.abs(a) > 1e-12).length / all.length,
    zeroVarianceShare: zero / multi.length,
    singletonRatio: singles / anchorGroups.size,
    meanAnchorGroupSize: all.length / anchorGroups.size,
    turns: all.length,
  };
}

function expectBruteForce(ov: ReturnType<typeof creditOverview>) {
  expect(ov.steps).toEqual([0, 1, 2, 3, 4]);
  ov.steps.forEach((s, r) => {
    const want = bruteForce(steps[s]);
    expect(ov.count[r].slice(0, want.count.length)).toEqual(want.count);
    want.mean.forEach((m, i) => {
      expect(ov.mean[r][i]).toBeCloseTo(m, 12);
    });
    want.meanAbs.forEach((m, i) => {
      expect(ov.meanAbs[r][i]).toBeCloseTo(m, 12);
    });
    const d = ov.diagnostics[r];
    expect(d.turns).toBe(want.turns);
    expect(d.trajectories).toBe(20);
    expect(d.advMean).toBeCloseTo(want.advMean, 12);
    expect(d.advStd).toBeCloseTo(want.advStd, 12);
    expect(d.nonZeroShare).toBeCloseTo(want.nonZeroShare, 12);
    expect(d.zeroVarianceShare).toBeCloseTo(want.zeroVarianceShare, 12);
    expect(d.singletonRatio).toBeCloseTo(want.singletonRatio, 12);
    expect(d.meanAnchorGroupSize).toBeCloseTo(want.meanAnchorGroupSize, 12);
  });
}

let written = "";
let backfilled = "";
beforeAll(() => {
  written = newRun("written");
  backfilled = newRun("backfilled");
  for (const s of steps) {
    // the summary ingest computes and stores with a step
    writeRolloutStep(written, s, null, undefined, { summary: summarizeStepInput(s) });
    writeRolloutStep(backfilled, s);
  }
  // a store whose steps were written before summaries existed (or bulk-loaded around writeRolloutStep)
  forgetStepSummaries(backfilled);
});

describe("credit over training from per-step summaries", () => {
  it("the summaries written with the steps give the brute-force answer", () => {
    expect(summaries(written)).toBe(5);
    const ov = creditOverview(written);
    expect(ov.turns).toBe(9);
    expectBruteForce(ov);
    expect(ov.entropy).toBeNull();
  });

  it("a step stored without a summary is summarised on first read, kept, and answers the same", () => {
    expect(summaries(backfilled)).toBe(0);
    const ov = creditOverview(backfilled, {}, { maxSteps: 3 });
    expect(ov.steps).toEqual([0, 2, 4]);
    expect(summaries(backfilled)).toBe(3);
    const all = creditOverview(backfilled);
    expect(summaries(backfilled)).toBe(5);
    expectBruteForce(all);
    const w = creditOverview(written);
    expect(all.mean).toEqual(w.mean.map((row) => row.map((v) => (v === null ? null : expect.closeTo(v, 12)))));
    expect(all.diagnostics).toEqual(
      w.diagnostics.map((d) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, typeof v === "number" ? expect.closeTo(v, 12) : v]))),
    );
  });

  it("a recomputed estimator's credit over training is the brute-force mean of lib/credit's advantages", () => {
    const ov = creditOverview(written, { estimator: "grpo" });
    expect(ov.source).toBe("recomputed");
    ov.steps.forEach((s, r) => {
      const res = runCredit({ estimator: "grpo", groups: creditGroups(steps[s]) });
      const byTurn: number[][] = [];
      for (const t of res.trajectories)
        t.advantages.forEach((a, i) => {
          byTurn[i] ??= [];
          byTurn[i].push(a);
        });
      byTurn.forEach((xs, i) => {
        expect(ov.count[r][i]).toBe(xs.length);
        expect(ov.mean[r][i]).toBeCloseTo(xs.reduce((x, y) => x + y, 0) / xs.length, 12);
      });
      expect(ov.diagnostics[r].zeroVarianceShare).toBeCloseTo(res.diagnostics.groups.zeroVarianceShare!, 12);
    });
  });

  it("maxTurns and maxSteps still cap the answer", () => {
    const ov = creditOverview(written, {}, { maxSteps: 2, maxTurns: 4 });
    expect(ov.steps).toEqual([0, 4]);
    expect(ov.turns).toBe(4);
    expect(ov.mean.every((row) => row.length === 4)).toBe(true);
  });
});

describe("turn entropy", () => {
  // 1 group x 2 trajectories: turn entropies from the tokens' (mean), or the trainer's own turn value
  // parsed as the ingest API parses a step (defaults filled in)
  const step = (n: number): RolloutStepInput =>
    rolloutStepInputSchema.parse({
      step: n,
      estimator: "grpo",
      groups: [
        {
          uid: "g",
          envId: "frozenlake",
          taskSeed: 0,
          trajectories: [
            {
              success: true,
              turns: [
                { observation: "o", action: "a b", reward: 0, advantage: 1, tokenIds: [1, 2], tokenEntropies: [1, 2] },
                { observation: "o", action: "a b c", reward: 1, advantage: 1, tokenIds: [1, 2, 3], tokenEntropies: [0, 0, 3] },
              ],
            },
            {
              success: false,
              turns: [
                // the trainer's turn entropy wins over the tokens'
                { observation: "o", action: "a", reward: 0, advantage: -1, entropy: 0.5, tokenIds: [1], tokenEntropies: [9] },
                // no entropy at all: not counted
                { observation: "o", action: "a", reward: 0, advantage: -1 },
              ],
            },
          ],
        },
      ],
    });

  it("is the mean of the turn's token entropies where the trainer sent only those", () => {
    const run = newRun("entropy");
    writeRolloutStep(run, step(0));
    const ov = creditOverview(run);
    // turn 1: (mean(1,2)=1.5 + 0.5) / 2; turn 2: mean(0,0,3) = 1 (the other trajectory has none)
    expect(ov.entropy![0][0]).toBeCloseTo(1, 12);
    expect(ov.entropy![0][1]).toBeCloseTo(1, 12);
  });

  it("reads token entropies sent packed (float32, base64) the same way", () => {
    const run = newRun("entropy-packed");
    const packed = (xs: number[]) => ({ dtype: "float32" as const, data: Buffer.from(new Float32Array(xs).buffer).toString("base64") });
    const s = step(0);
    const [u0, u1] = s.groups[0].trajectories[0].turns;
    u0.tokenEntropies = packed([1, 2]);
    u1.tokenEntropies = packed([0, 0, 3]);
    writeRolloutStep(run, rolloutStepInputSchema.parse(s));
    const ov = creditOverview(run);
    expect(ov.entropy![0][0]).toBeCloseTo(1, 12);
    expect(ov.entropy![0][1]).toBeCloseTo(1, 12);
  });

  it("is derived the same way from the stored token data when the summary is made on read", () => {
    const run = newRun("entropy-backfill");
    writeRolloutStep(run, step(0));
    forgetStepSummaries(run);
    const ov = creditOverview(run);
    // float32 token storage: 1.5 and 1 are exact in float32
    expect(ov.entropy![0][0]).toBeCloseTo(1, 6);
    expect(ov.entropy![0][1]).toBeCloseTo(1, 6);
    expect(summaries(run)).toBe(1);
  });
});
