// Two-sample tests for the experiment scripts: Welch's t-test (unequal variances) and an exact
// permutation test of the difference in means. Small samples (5 seeds), so both are reported.

export interface WelchResult {
  /** mean(a) - mean(b) */
  diff: number;
  t: number;
  /** Welch–Satterthwaite degrees of freedom */
  df: number;
  /** two-sided p-value */
  p: number;
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
  if (se2 === 0) return { diff, t: diff === 0 ? 0 : Math.sign(diff) * Infinity, df: a.length + b.length - 2, p: diff === 0 ? 1 : 0 };
  const t = diff / Math.sqrt(se2);
  const df = se2 ** 2 / (va ** 2 / (a.length - 1) + vb ** 2 / (b.length - 1));
  return { diff, t, df, p: studentTwoSidedP(t, df) };
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
