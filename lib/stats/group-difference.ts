// The compare page's "difference of the two groups" at one step: each run's stored value of the
// metric at that step, per group n, mean and std, the difference of means (A - B) with Welch's
// 95 % interval and p-value, and a permutation p-value. Pure: the page fetches the values.
import { permutationTestAuto, welchTTest, type WelchResult } from "./two-sample";

export interface GroupSample {
  label: string;
  /** run id -> the run's stored value at the step, or undefined when it has no point there */
  values: { runId: string; value: number | undefined }[];
}

export interface GroupStats {
  label: string;
  n: number;
  mean: number;
  /** sample standard deviation (n - 1) */
  std: number;
  /** runs of the group with no finite value at the step, left out */
  missing: string[];
}

export type GroupDifference =
  | { ok: true; a: GroupStats; b: GroupStats; welch: WelchResult; permutation: { p: number; exact: boolean; splits: number } }
  | { ok: false; a: GroupStats; b: GroupStats; reason: string };

function describe(g: GroupSample): { stats: GroupStats; xs: number[] } {
  const xs: number[] = [];
  const missing: string[] = [];
  for (const v of g.values) {
    if (v.value === undefined || !Number.isFinite(v.value)) missing.push(v.runId);
    else xs.push(v.value);
  }
  const n = xs.length;
  const mean = n ? xs.reduce((s, x) => s + x, 0) / n : Number.NaN;
  const std = n > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1)) : Number.NaN;
  return { stats: { label: g.label, n, mean, std, missing }, xs };
}

/** Group A minus group B at one step; not ok (with the reason) when a group has fewer than 2 values. */
export function groupDifference(a: GroupSample, b: GroupSample): GroupDifference {
  const da = describe(a);
  const db = describe(b);
  const short = [da, db].find((d) => d.stats.n < 2);
  if (short)
    return {
      ok: false,
      a: da.stats,
      b: db.stats,
      reason: `${short.stats.label} has ${short.stats.n} run(s) with a value at this step; each group needs at least 2`,
    };
  const perm = permutationTestAuto(da.xs, db.xs);
  return { ok: true, a: da.stats, b: db.stats, welch: welchTTest(da.xs, db.xs), permutation: { p: perm.p, exact: perm.exact, splits: perm.splits } };
}

/** The value at `step` in a run's full-resolution steps/values (binary search), or undefined. */
export function valueAtStep(steps: readonly number[], values: readonly (number | string)[], step: number): number | undefined {
  let lo = 0;
  let hi = steps.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] === step) {
      const v = values[mid];
      return typeof v === "number" ? v : Number(v);
    }
    if (steps[mid] < step) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * The value a run had `seconds` after `start` (epoch seconds): its last stored point at or before
 * that time, from its full-resolution values and wall times; undefined before its first point or
 * past its last (a run that had not run that long has no value there).
 */
export function valueAtElapsed(wallTimes: readonly number[], values: readonly (number | string)[], start: number, seconds: number): number | undefined {
  const t = start + seconds;
  let best = -1;
  let last = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < wallTimes.length; i++) {
    if (wallTimes[i] <= t && (best < 0 || wallTimes[i] >= wallTimes[best])) best = i;
    if (wallTimes[i] > last) last = wallTimes[i];
  }
  if (best < 0 || t > last) return undefined;
  const v = values[best];
  return typeof v === "number" ? v : Number(v);
}

/** Seconds from a run's start to its last stored point: how long it ran, as far as this metric says. */
export function elapsedSpan(wallTimes: readonly number[], start: number): number {
  let last = Number.NEGATIVE_INFINITY;
  for (const w of wallTimes) if (w > last) last = w;
  return last - start;
}
