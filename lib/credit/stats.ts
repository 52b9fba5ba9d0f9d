// Shared statistics with the conventions of lib/credit/README.md ("Degenerate statistics"):
// unbiased (N-1) std like torch.std, epsilon added to std, verl's masked_whiten for batch whitening.
// Every variance is two-pass (mean first, then squared deviations): precise at any offset.
import { CreditRequestError } from "./errors";

/** Per-key statistics of `values` grouped by integer `keys` (two passes, like torch.mean / torch.std). */
export interface KeyedStats {
  /** Members per key. Shape (nKeys,). */
  count: Int32Array;
  /** Mean per key; a constant key's mean is its value exactly (no rounding residue in x - mean). Shape (nKeys,). */
  mean: Float64Array;
  /** Unbiased (N-1) std per key; 0 when count < 2. Shape (nKeys,). */
  std: Float64Array;
  /** 1 when every member of the key has the same value (zero variance, exactly). Shape (nKeys,). */
  constant: Uint8Array;
}

/**
 * Group statistics over rows.
 * Args:
 *   values: (n,) values; rows with keys[i] < 0 are skipped.
 *   keys: (n,) integer key per row in [0, nKeys).
 *   nKeys: number of keys.
 */
export function keyedStats(values: ArrayLike<number>, keys: ArrayLike<number>, nKeys: number): KeyedStats {
  const count = new Int32Array(nKeys);
  const sum = new Float64Array(nKeys);
  const first = new Float64Array(nKeys);
  const constant = new Uint8Array(nKeys).fill(1);
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    if (k < 0) continue;
    const v = values[i];
    if (count[k] === 0) first[k] = v;
    else if (v !== first[k]) constant[k] = 0;
    count[k]++;
    sum[k] += v;
  }
  const mean = new Float64Array(nKeys);
  for (let k = 0; k < nKeys; k++) mean[k] = count[k] > 0 ? (constant[k] ? first[k] : sum[k] / count[k]) : 0;
  const m2 = new Float64Array(nKeys);
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    if (k < 0) continue;
    const d = values[i] - mean[k];
    m2[k] += d * d;
  }
  const std = new Float64Array(nKeys);
  for (let k = 0; k < nKeys; k++) std[k] = count[k] > 1 ? Math.sqrt(m2[k] / (count[k] - 1)) : 0;
  return { count, mean, std, constant };
}

/** A whitening std at most this share of the largest |valid value| counts as zero variance. */
export const ROUNDING_SPREAD = 1e-13;

/** Result of a whitening: the whitened values and the statistics used. */
export interface Whitened {
  /** (n,) whitened values. */
  out: Float64Array;
  mean: number;
  variance: number;
  /**
   * Turns whose value differed from the batch's single valid value when every valid token was
   * equal (zero variance): whitened to 0 instead of (x - m) * 1e4. See README "Degenerate statistics".
   * With `maskedRows: "zero"` only valid turns count here; masked ones count in `masked`.
   */
  zeroed: number;
  /** Masked turns (weight 0) given 0 (`maskedRows: "zero"`); 0 with `maskedRows: "whiten"`. */
  masked: number;
}

/**
 * What whitening gives a masked turn (weight 0), which is never a member of the statistic.
 * zero: 0, always (the convention for an advantage: verl masks the position out of the loss, and
 *   `(x - m) / sqrt(var + 1e-8)` there reaches thousands when the valid tokens' spread is tiny).
 * whiten: verl's formula, for an intermediate that valid turns read back (MARS `code` whitens
 *   rewards, then sums them into returns): valid turns keep verl's exact values.
 */
export type MaskedRows = "zero" | "whiten";

/**
 * verl `masked_whiten` with token weights: `(x - m) * rsqrt(var + 1e-8)` where m is the
 * token-weighted mean `sum(w x) / (sum(w) + 1e-8)` and var the Bessel-corrected weighted variance
 * `masked_mean((x - m)^2) * N / (N - 1)` over the N = sum(w) valid tokens (verl torch_functional).
 * Rows with weight 0 (masked turns, no valid token) do not enter the statistics and get 0
 * (`maskedRows`, default "zero"; see MaskedRows).
 * Degenerate cases (one convention for every estimator, README "Degenerate statistics"):
 * N <= 1 raises a CreditRequestError like verl's ValueError; all valid tokens equal gives 0 on
 * every row (`zeroed` counts rows that differed), never (x - m) / sqrt(1e-8).
 * Args:
 *   values: (n,) per-turn value, constant over the turn's tokens.
 *   weights: (n,) valid token count of each turn.
 *   who: the estimator, named in the error.
 *   maskedRows: what a masked turn gets (MaskedRows).
 */
export function maskedWhiten(values: ArrayLike<number>, weights: ArrayLike<number>, who = "this estimator", maskedRows: MaskedRows = "zero"): Whitened {
  return maskedWhitenTurns(values, null, weights, who, maskedRows);
}

/**
 * Whitening for values that vary inside a turn: turn r has weights[r] tokens whose values have
 * mean `turnMean[r]` and sum of squared deviations from it `within[r]` (null: 0, constant turns).
 * Two passes (mean first, then squared deviations), so a large common offset keeps its precision:
 * sum_j (x_j - m)^2 = within + w (turnMean - m)^2 for each turn.
 * Returns the whitened turn means; a masked turn (weight 0) as `maskedRows` says.
 */
export function maskedWhitenTurns(
  turnMean: ArrayLike<number>,
  within: ArrayLike<number> | null,
  weights: ArrayLike<number>,
  who = "this estimator",
  maskedRows: MaskedRows = "zero",
): Whitened {
  const n = turnMean.length;
  let wsum = 0;
  let s = 0;
  let common = NaN; // the value of every valid token, while they are all equal
  let constant = true;
  let maxAbs = 0;
  for (let i = 0; i < n; i++) {
    const w = weights[i];
    if (w <= 0) continue;
    const v = turnMean[i];
    wsum += w;
    s += w * v;
    if (Math.abs(v) > maxAbs) maxAbs = Math.abs(v);
    if (!constant) continue;
    if (within !== null && within[i] !== 0) constant = false;
    else if (Number.isNaN(common)) common = v;
    else if (v !== common) constant = false;
  }
  if (wsum <= 1) {
    throw new CreditRequestError(
      `groups: estimator "${who}" whitens over the batch's valid tokens (turn \`tokens\`, default 1) and needs at least 2, got ${wsum} (verl masked_whiten raises here too)`,
      "groups",
    );
  }
  const mean = s / (wsum + 1e-8); // verl masked_mean: sum / (mask.sum() + 1e-8)
  const out = new Float64Array(n);
  let variance = 0;
  let spread = 0; // the values' own std, around their exact mean (verl's mean carries a 1e-8 bias)
  if (!constant) {
    const exactMean = s / wsum;
    let m2 = 0;
    let m2exact = 0;
    for (let i = 0; i < n; i++) {
      const w = weights[i];
      if (w <= 0) continue;
      const d = turnMean[i] - mean;
      const e = turnMean[i] - exactMean;
      const inner = within === null ? 0 : within[i];
      m2 += w * d * d + inner;
      m2exact += w * e * e + inner;
    }
    variance = ((m2 / (wsum + 1e-8)) * wsum) / (wsum - 1); // Bessel: N / (N - 1)
    spread = Math.sqrt(m2exact / (wsum - 1));
  }
  // Zero variance, or a spread at rounding level (values equal in exact arithmetic that rounding
  // set apart, e.g. centred rewards): every row 0. Rows that differ from the valid tokens' value
  // are counted in `zeroed` (masked ones in `masked` instead, when they are zeroed as masked);
  // verl would give them (x - m) * 1e4. The spread is judged around the
  // exact mean: around verl's (sum / (N + 1e-8)) two equal values 0.5 look 2.5e-9 apart, and a masked
  // turn then got (0 - 0.5) * 1e4 = -5000 (found by the bounded-inputs property test).
  const tol = ROUNDING_SPREAD * maxAbs;
  const zeroMasked = maskedRows === "zero";
  let masked = 0;
  if (zeroMasked) for (let i = 0; i < n; i++) if (weights[i] <= 0) masked++;
  if (constant || spread <= tol) {
    const ref = constant ? common : s / wsum;
    let zeroed = 0;
    for (let i = 0; i < n; i++) if (!(zeroMasked && weights[i] <= 0) && Math.abs(turnMean[i] - ref) > tol) zeroed++;
    return { out, mean, variance: 0, zeroed, masked };
  }
  const inv = 1 / Math.sqrt(variance + 1e-8);
  // masked turns stay 0 (out is zero-filled) unless the caller reads verl's value back
  for (let i = 0; i < n; i++) if (!(zeroMasked && weights[i] <= 0)) out[i] = (turnMean[i] - mean) * inv;
  return { out, mean, variance, zeroed: 0, masked };
}
