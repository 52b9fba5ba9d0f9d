// What evaluation jobs (baseline, onnx-eval, checkpoint-eval) share: per-batch and cumulative curves, the
// fenced write of a batch's rollouts and curves together, and pass@k.
import { runGroupTotals, runTrajectoryTotals, writeRolloutStep } from "../../lib/db/rollouts";
import type { MetricPoint } from "../../lib/db/metric-points";
import { writeMetrics } from "../../lib/db/metric-writes";
import { writeTransaction } from "../../lib/db/raw";
import type { GroupInput } from "../../lib/schemas/rollouts";
import type { JobContext } from "./types";

export interface EvalTotals {
  episodes: number;
  successes: number;
  reward: number;
  turns: number;
}

/** Totals of what earlier attempts of this job stored (a resumed job continues its cumulative curves). */
export function storedTotals(runId: string): EvalTotals {
  const r = runTrajectoryTotals(runId);
  return { episodes: r.trajectories, successes: r.successes, reward: r.reward, turns: r.turns };
}

/** Stores one batch (as rollout step `step`) with its curves (and `extra` values, e.g. the train overlap); updates `totals`; returns the batch's values. */
export function storeEvalBatch(
  ctx: JobContext,
  runId: string,
  step: number,
  groups: GroupInput[],
  seconds: number,
  totals: EvalTotals,
  extra: Record<string, number> = {},
): Record<string, number> {
  const trajs = groups.flatMap((g) => g.trajectories);
  const episodes = trajs.length;
  const successes = trajs.filter((t) => t.success).length;
  const reward = trajs.reduce((s, t) => s + (t.reward ?? t.turns.reduce((a, u) => a + u.reward, 0)), 0);
  const turns = trajs.reduce((s, t) => s + t.turns.length, 0);
  const invalid = trajs.reduce((s, t) => s + t.turns.filter((u) => u.valid === false).length, 0);
  totals.episodes += episodes;
  totals.successes += successes;
  totals.reward += reward;
  totals.turns += turns;
  const values: Record<string, number> = {
    "eval/success_rate": successes / episodes,
    "eval/return_mean": reward / episodes,
    "eval/length_mean": turns / episodes,
    "eval/invalid_action_rate": turns ? invalid / turns : 0,
    "eval/success_rate_cum": totals.successes / totals.episodes,
    "eval/return_mean_cum": totals.reward / totals.episodes,
    "eval/episodes": totals.episodes,
    "perf/env_steps_per_s": turns / Math.max(seconds, 1e-6),
    ...extra,
  };
  writeEvalBatch(ctx, runId, step, groups, values);
  ctx.log(
    `batch ${step + 1}: success ${values["eval/success_rate"].toFixed(3)}, return ${values["eval/return_mean"].toFixed(3)}, ` +
      `length ${values["eval/length_mean"].toFixed(1)}, ${Math.round(values["perf/env_steps_per_s"])} env steps/s`,
  );
  return values;
}

/** Writes one batch's rollouts (as rollout step `step`) and its curve points at that step, fenced, together. */
export function writeEvalBatch(ctx: JobContext, runId: string, step: number, groups: GroupInput[], values: Record<string, number>): void {
  const now = Date.now() / 1000;
  const points: MetricPoint[] = Object.entries(values).map(([key, value]) => ({ key, step, value, wallTime: now }));
  // Rollouts and curves of a batch land together or not at all, and only while we hold the lease.
  writeTransaction(
    ctx.fence,
    () => {
      writeRolloutStep(runId, { step, estimator: null, params: null, diagnostics: null, groups }, null);
      writeMetrics(runId, points, null);
    },
    undefined,
    { runId },
  );
}

export function summary(totals: EvalTotals) {
  const n = Math.max(1, totals.episodes);
  return { episodes: totals.episodes, successRate: totals.successes / n, meanReturn: totals.reward / n, meanLength: totals.turns / n };
}

/**
 * pass@k of one task from n sampled episodes with c successes: the chance that k of them, drawn
 * without replacement, hold at least one success, 1 - C(n-c, k) / C(n, k) (the unbiased
 * estimator; with n = k it is 1 if any succeeded, else 0). As a product, so large n never overflows.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || k < 1 || n < k || c < 0 || c > n)
    throw new RangeError(`pass@k needs integers 1 <= k <= n and 0 <= c <= n (got n=${n}, c=${c}, k=${k})`);
  if (n - c < k) return 1;
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** Per stored task group of a run: its uid, episodes, successes and summed reward (a resumed job rebuilds its totals from them). */
export function storedGroups(runId: string): { uid: string; n: number; c: number; reward: number }[] {
  return runGroupTotals(runId).map((g) => ({ uid: g.uid, n: g.trajectories, c: g.successes, reward: g.reward }));
}
