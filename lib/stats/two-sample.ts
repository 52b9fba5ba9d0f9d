// Two-sample tests (pure, no I/O), one implementation for the experiment scripts and the compare
// page: Welch's t-test (unequal variances) with the t confidence interval of the difference in
// means, a paired t-test (runs that share a seed share their task draws and initial weights), a
// percentile bootstrap interval and a permutation test (exact, or sampled when the splits are too
// many to list). Small samples (5 seeds), so several are reported side by side.
import { createRng } from "../envs/rng";

export interface WelchResult {
  /** mean(a) - mean(b) */
  diff: number;
  t: number;
  /** Welch–Satterthwaite degrees of freedom */
  df: number;
  /** two-sided p-value */
  p: number;
  /** standard error of diff */
  se: number;
  /** 95 % confidence interval of diff: diff ± t(0.975, df) · se */
  ci95: [number, number];
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const variance = (xs: number[]) => {
  const m = mean(xs);
  return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1);
};

export function welchTTest(a: number[], b: number[]): WelchResult {
  if (a.length < 2 || b.length < 2) throw new Error("welchTTest: each sample needs at least 2 values");
  const diff = mean(a) - mean(b);
  const va = variance(a) / a.length;
  const vb = variance(b) / b.length;
  const se2 = va + vb;
  // Both samples constant: no spread to test against; equal means are no evidence, unequal ones are total.
  if (se2 === 0) return { diff, t: diff === 0 ? 0 : Math.sign(diff) * Infinity, df: a.length + b.length - 2, p: diff === 0 ? 1 : 0, se: 0, ci95: [diff, diff] };
  const se = Math.sqrt(se2);
  const t = diff / se;
  const df = se2 ** 2 / (va ** 2 / (a.length - 1) + vb ** 2 / (b.length - 1));
  const h = studentQuantile(0.975, df) * se;
  return { diff, t, df, p: studentTwoSidedP(t, df), se, ci95: [diff - h, diff + h] };
}

/** Paired t-test of mean(a[i] - b[i]) (same length: pair i is one seed run both ways). */
export function pairedTTest(a: number[], b: number[]): WelchResult {
  if (a.length !== b.length) throw new Error(`pairedTTest: samples differ in length (${a.length} vs ${b.length})`);
  if (a.length < 2) throw new Error("pairedTTest: needs at least 2 pairs");
  const d = a.map((x, i) => x - b[i]);
  const diff = mean(d);
  const df = d.length - 1;
  const se = Math.sqrt(variance(d) / d.length);
  if (se === 0) return { diff, t: diff === 0 ? 0 : Math.sign(diff) * Infinity, df, p: diff === 0 ? 1 : 0, se: 0, ci95: [diff, diff] };
  const t = diff / se;
  const h = studentQuantile(0.975, df) * se;
  return { diff, t, df, p: studentTwoSidedP(t, df), se, ci95: [diff - h, diff + h] };
}

/**
 * The q-quantile (0 < q < 1) of Student's t with df degrees of freedom, by bisection on the
 * two-sided tail (monotone in t); 1e-10 accurate, plenty for a confidence interval.
 */
export function studentQuantile(q: number, df: number): number {
  if (!(q > 0 && q < 1)) throw new Error(`studentQuantile: q must be in (0, 1), got ${q}`);
  if (!(df > 0)) throw new Error(`studentQuantile: df must be positive, got ${df}`);
  if (q === 0.5) return 0;
  const tail = 2 * Math.min(q, 1 - q); // P(|T| >= t) at the wanted t
  let lo = 0;
  let hi = 1;
  while (studentTwoSidedP(hi, df) > tail) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-10; i++) {
    const mid = (lo + hi) / 2;
    if (studentTwoSidedP(mid, df) > tail) lo = mid;
    else hi = mid;
  }
  const t = (lo + hi) / 2;
  return q > 0.5 ? t : -t;
}

/**
 * The smallest true difference a two-sided Welch test at level alpha would detect with the given
 * power, for samples with this standard error and df (the usual t approximation:
 * (t(1 - alpha/2) + t(power)) · se). Says how large an effect the experiment could have seen.
 */
export function minimumDetectableDifference(se: number, df: number, alpha = 0.05, power = 0.8): number {
  return (studentQuantile(1 - alpha / 2, df) + studentQuantile(power, df)) * se;
}

/**
 * Power of a two-sided Welch test at level alpha to detect a true difference `effect` with n runs
 * per arm whose scores have standard deviations sdA and sdB: P(T_df > t(1 - alpha/2, df) - effect/se),
 * the noncentral t's usual approximation, with se and df as Welch's test would compute them from
 * those spreads. Against scipy's noncentral t it is within 0.005 from 10 runs per arm and low
 * below (5 runs: 0.283 against 0.346), so a plan made with it errs towards more seeds.
 */
export function welchPower(effect: number, sdA: number, sdB: number, n: number, alpha = 0.05): number {
  if (!(n >= 2 && Number.isInteger(n))) throw new Error(`welchPower: n must be an integer >= 2, got ${n}`);
  if (!(sdA >= 0 && sdB >= 0) || sdA + sdB === 0) throw new Error("welchPower: the standard deviations must be >= 0, not both 0");
  const va = sdA ** 2 / n;
  const vb = sdB ** 2 / n;
  const se = Math.sqrt(va + vb);
  const df = (va + vb) ** 2 / ((va ** 2 + vb ** 2) / (n - 1));
  const x = studentQuantile(1 - alpha / 2, df) - Math.abs(effect) / se;
  // P(T > x) from the two-sided tail P(|T| >= |x|)
  return x >= 0 ? studentTwoSidedP(x, df) / 2 : 1 - studentTwoSidedP(-x, df) / 2;
}

/**
 * The fewest runs per arm (seeds) for which a two-sided Welch test at level alpha reaches `power`
 * against a true difference `effect`, from the arms' standard deviations (a pilot's estimates).
 */
export function seedsForPower(effect: number, sdA: number, sdB: number, opts: { alpha?: number; power?: number; max?: number } = {}): number {
  const power = opts.power ?? 0.8;
  const max = opts.max ?? 10_000;
  if (!(effect !== 0 && Number.isFinite(effect))) throw new Error(`seedsForPower: effect must be a non-zero number, got ${effect}`);
  for (let n = 2; n <= max; n++) if (welchPower(effect, sdA, sdB, n, opts.alpha) >= power) return n;
  throw new Error(`seedsForPower: more than ${max} runs per arm needed`);
}

/**
 * Percentile bootstrap interval of mean(a) - mean(b): each sample resampled with replacement on
 * its own, `resamples` times, from a seeded stream (the same inputs give the same interval).
 */
export function bootstrapDiffCI(a: number[], b: number[], opts: { level?: number; resamples?: number; seed?: string } = {}): [number, number] {
  const level = opts.level ?? 0.95;
  const resamples = opts.resamples ?? 10_000;
  if (a.length < 1 || b.length < 1) throw new Error("bootstrapDiffCI: each sample needs at least 1 value");
  if (!(level > 0 && level < 1)) throw new Error(`bootstrapDiffCI: level must be in (0, 1), got ${level}`);
  const rng = createRng(opts.seed ?? "bootstrap");
  const resampledMean = (xs: number[]) => {
    let s = 0;
    for (let i = 0; i < xs.length; i++) s += xs[rng.int(xs.length)];
    return s / xs.length;
  };
  const diffs = Float64Array.from({ length: resamples }, () => resampledMean(a) - resampledMean(b)).sort();
  const at = (q: number) => diffs[Math.min(resamples - 1, Math.max(0, Math.floor(q * resamples)))];
  return [at((1 - level) / 2), at(1 - (1 - level) / 2)];
}

/** P(|T| >= |t|) for Student's t with df degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2). */
export function studentTwoSidedP(t: number, df: number): number {
  if (!Number.isFinite(t)) return 0;
  return regularizedIncompleteBeta(df / (df + t * t), df / 2, 0.5);
}

/**
 * Exact two-sided permutation test of mean(a) - mean(b): the share of all ways to split the
 * pooled values into groups of |a| and |b| whose difference is at least as large in size.
 */
export function permutationTest(a: number[], b: number[]): { diff: number; p: number; splits: number } {
  const pooled = [...a, ...b];
  const n = pooled.length;
  const k = a.length;
  if (n > 24) throw new Error("permutationTest: exact enumeration is for small samples (at most 24 values)");
  const total = pooled.reduce((s, x) => s + x, 0);
  const observed = Math.abs(mean(a) - mean(b));
  let hits = 0;
  let splits = 0;
  const choose = (start: number, left: number, sum: number) => {
    if (left === 0) {
      splits++;
      const d = Math.abs(sum / k - (total - sum) / (n - k));
      if (d >= observed - 1e-12) hits++;
      return;
    }
    for (let i = start; i <= n - left; i++) choose(i + 1, left - 1, sum + pooled[i]);
  };
  choose(0, k, 0);
  return { diff: mean(a) - mean(b), p: hits / splits, splits };
}

/** Splits permutationTestAuto enumerates exactly; above it, it samples (C(16, 8) = 12,870; C(20, 10) = 184,756). */
export const EXACT_PERMUTATION_SPLITS = 200_000;

/** C(n, k) as a float (exact for the sizes enumerated here). */
export function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return Math.round(c);
}

/**
 * Two-sided permutation test of mean(a) - mean(b): exact when the pooled values split into at most
 * EXACT_PERMUTATION_SPLITS ways, else `resamples` random splits from a seeded stream, with the
 * observed split counted once ((hits + 1) / (resamples + 1): never 0).
 */
export function permutationTestAuto(
  a: number[],
  b: number[],
  opts: { resamples?: number; seed?: string } = {},
): { diff: number; p: number; splits: number; exact: boolean } {
  if (a.length < 1 || b.length < 1) throw new Error("permutationTestAuto: each sample needs at least 1 value");
  const n = a.length + b.length;
  if (n <= 24 && binomial(n, a.length) <= EXACT_PERMUTATION_SPLITS) return { ...permutationTest(a, b), exact: true };
  const resamples = opts.resamples ?? 20_000;
  const rng = createRng(opts.seed ?? "permutation");
  const pooled = [...a, ...b];
  const observed = Math.abs(mean(a) - mean(b));
  let hits = 0;
  for (let r = 0; r < resamples; r++) {
    const s = rng.shuffle(pooled);
    let sa = 0;
    for (let i = 0; i < a.length; i++) sa += s[i];
    let sb = 0;
    for (let i = a.length; i < n; i++) sb += s[i];
    if (Math.abs(sa / a.length - sb / b.length) >= observed - 1e-12) hits++;
  }
  return { diff: mean(a) - mean(b), p: (hits + 1) / (resamples + 1), splits: resamples, exact: false };
}

// Regularized incomplete beta I_x(a, b) by its continued fraction (Numerical Recipes, betacf).
function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const lnFront = lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x);
  if (x < (a + 1) / (a + b + 2)) return (Math.exp(lnFront) * betaContinuedFraction(x, a, b)) / a;
  return 1 - (Math.exp(lnFront) * betaContinuedFraction(1 - x, b, a)) / b;
}

function betaContinuedFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a - 1 + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + 1 + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-14) break;
  }
  return h;
}

// Lanczos approximation (g = 7, n = 9).
function lnGamma(z: number): number {
  const g = 7;
  const coef = [
    // biome-ignore lint/correctness/noPrecisionLoss: the published coefficients, kept as printed
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61503916999185, 12.507343278686905, -0.13857109526572012,
    9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (z < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * z)) - lnGamma(1 - z);
  z -= 1;
  let x = coef[0];
  for (let i = 1; i < g + 2; i++) x += coef[i] / (z + i);
  const t = z + g + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(x);
}

/**
 * One sentence on a comparison of arm A minus arm B from its tests' two-sided p-values: "A is ahead"
 * only when every test rejects at `alpha`; when some do and some do not, it names both sides.
 */
export function verdict(diff: number, tests: Record<string, number>, names: { a: string; b: string }, alpha = 0.05): string {
  const entries = Object.entries(tests);
  if (entries.length === 0) throw new Error("verdict: no tests given");
  const pct = `${alpha * 100} %`;
  const lead = diff > 0 ? names.a : names.b;
  const rejecting = entries.filter(([, p]) => p < alpha);
  const list = (xs: [string, number][]) => xs.map(([n, p]) => `${n} p = ${p.toFixed(3)}`).join(", ");
  if (rejecting.length === entries.length && diff !== 0) return `${lead} is ahead at the ${pct} level (every test: ${list(entries)})`;
  if (rejecting.length === 0 || diff === 0) return `no significant difference at the ${pct} level (${list(entries)})`;
  const others = entries.filter(([, p]) => p >= alpha);
  return `mixed: ${list(rejecting)} below ${alpha}, ${list(others)} not; suggestive that ${lead} is ahead, not significant under every test`;
}
