// The failure signals beside credit over training (lib/credit/batch-diagnostics.ts, kept per step
// by lib/db/credit-summary.ts): each on a constructed batch whose answer is known, and through the
// store for an ingested run (stored and recomputed advantages).
import { describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import type { RolloutStepInput } from "@/lib/schemas/rollouts";
import { outcomeShares, templateCollapse, withinGroupVariance } from "@/lib/credit/batch-diagnostics";

useTempDatabase("batch-diagnostics");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep } = await import("@/lib/db/rollouts");
const { forgetStepSummaries } = await import("../helpers/db-inspect");
const { creditOverview } = await import("@/lib/runs/credit-views");
const { summarizeStepInput } = await import("@/lib/schemas/step-summary");

const OBJECTS = ["apple", "mug", "knife", "towel"];
type Traj = RolloutStepInput["groups"][number]["trajectories"][number];

/** A step of 4 tasks x 4 trajectories; `act` writes each turn's action for task k. */
function step(
  n: number,
  opts: {
    act: (task: number, turn: number) => string;
    length: (task: number, i: number) => number;
    success: (task: number, i: number) => boolean;
    advantage?: (len: number) => number;
  },
): RolloutStepInput {
  return {
    step: n,
    estimator: "grpo",
    groups: OBJECTS.map((obj, k) => ({
      uid: `task-${k}`,
      envId: "alfworld",
      taskSeed: k,
      trajectories: Array.from({ length: 4 }, (_, i): Traj => {
        const len = opts.length(k, i);
        const success = opts.success(k, i);
        return {
          success,
          truncated: false,
          turns: Array.from({ length: len }, (_, t) => ({
            observation: t === 0 ? `Your task is to: put a clean ${obj} in the cabinet.` : `You see a shelf and a ${obj}.`,
            action: opts.act(k, t),
            reward: t === len - 1 && success ? 1 : 0,
            valid: true,
            done: t === len - 1,
            advantage: opts.advantage ? opts.advantage(len) : null,
          })),
        };
      }),
    })),
  };
}

describe("batch diagnostics, pure", () => {
  it("outcome shares count all-success, all-fail and mixed groups among groups of 2+", () => {
    expect(outcomeShares([[true, true], [false, false, false], [true, false], [true]])).toEqual({ allSuccess: 1 / 3, allFail: 1 / 3, mixed: 1 / 3 });
    expect(outcomeShares([[true]])).toBeNull();
  });

  it("within-group reward variance is the mean population variance of the groups' scores", () => {
    expect(withinGroupVariance([[0, 1], [2, 2, 2], [5]])).toBeCloseTo((0.25 + 0) / 2, 12);
    expect(
      withinGroupVariance([
        [1, 1],
        [0, 0],
      ]),
    ).toBe(0);
  });

  it("template collapse: actions naming their task retrieve it; one template for every task scores chance", () => {
    const tasks = OBJECTS.map((o) => `Your task is to: put a clean ${o} in the cabinet.`);
    const faithful = OBJECTS.flatMap((o, k) => [0, 1].map(() => ({ task: k, text: `take ${o}\ngo to cabinet` })));
    expect(templateCollapse(tasks, faithful)).toEqual({ accuracy: 1, chance: 0.25 });
    const collapsed = OBJECTS.flatMap((_, k) => [0, 1].map(() => ({ task: k, text: "Think: I should explore.\ngo to cabinet" })));
    expect(templateCollapse(tasks, collapsed)).toEqual({ accuracy: 0.25, chance: 0.25 });
    expect(templateCollapse(tasks.slice(0, 1), faithful.slice(0, 1))).toBeNull();
  });
});

describe("batch diagnostics, kept per step", () => {
  it("an all-zero-variance step: every group all-fail, variance 0, zero-variance share 1", () => {
    const s = summarizeStepInput(step(0, { act: (k) => `take ${OBJECTS[k]}`, length: () => 3, success: () => false }));
    expect(s.diag).toMatchObject({ allFailShare: 1, allSuccessShare: 0, mixedShare: 0, rewardVariance: 0, zeroVarianceShare: 1 });
  });

  it("a length-biased batch shows its bias by episode length; a collapsed batch sits at chance", () => {
    // short episodes succeed and get +1, long ones fail and get -1: the bias an estimator can bake in
    const biased = summarizeStepInput(
      step(0, { act: () => "Think: I should explore.", length: (_, i) => (i < 2 ? 2 : 6), success: (_, i) => i < 2, advantage: (len) => (len === 2 ? 1 : -1) }),
    );
    expect(biased.lenCount[2]).toBe(4 * 2 * 2);
    expect(biased.lenSum[2] / biased.lenCount[2]).toBe(1);
    expect(biased.lenSum[6] / biased.lenCount[6]).toBe(-1);
    expect(biased.diag.mixedShare).toBe(1);
    expect(biased.diag.collapseAccuracy).toBeCloseTo(0.25, 12); // one template for every task
    expect(biased.diag.collapseChance).toBe(0.25);
  });

  it("an ingested run's overview carries them, stored and recomputed, and a step stored before them gets them on read", () => {
    const runId = createRun({
      project: "t",
      name: "diag",
      kind: "imported",
      jobKind: null,
      config: {},
      envId: "alfworld",
      estimator: "grpo",
      status: "running",
    }).runId;
    // faithful at step 0 (actions name the task's object), collapsed at step 1
    writeRolloutStep(
      runId,
      step(0, { act: (k) => `take ${OBJECTS[k]}`, length: (_, i) => 2 + i, success: (k, i) => (k + i) % 2 === 0, advantage: (len) => len / 10 }),
    );
    writeRolloutStep(
      runId,
      step(1, { act: () => "Think: explore", length: (_, i) => 2 + i, success: (k, i) => (k + i) % 2 === 0, advantage: (len) => len / 10 }),
    );
    // drop the kept summaries: the first read makes them from the stored rows (texts included)
    forgetStepSummaries(runId);
    for (const source of [{}, { estimator: "grpo" }]) {
      const ov = creditOverview(runId, source);
      expect(ov.diagnostics.map((d) => [d.collapseAccuracy, d.collapseChance])).toEqual([
        [1, 0.25],
        [0.25, 0.25],
      ]);
      expect(ov.diagnostics.map((d) => d.mixedShare)).toEqual([1, 1]);
      expect(ov.byLength.lengths).toEqual([2, 3, 4, 5]);
    }
    const stored = creditOverview(runId, {});
    stored.byLength.mean[0].forEach((m, i) => {
      expect(m).toBeCloseTo([0.2, 0.3, 0.4, 0.5][i], 12);
    });
  });
});
