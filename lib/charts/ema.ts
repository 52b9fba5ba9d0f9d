// Debiased exponential moving average: the smoothing TensorBoard and W&B draw over noisy curves.
//
//   last_t = w * last_{t-1} + (1 - w) * v_t,   smoothed_t = last_t / (1 - w^n_t)
//
// n_t counts the values seen so far; dividing by (1 - w^n) removes the bias toward the zero the
// average starts from (Adam's bias correction, Kingma & Ba 2015, Sec. 3), so the first smoothed
// point equals the first value instead of w times less. TensorBoard: `tensorboard/plugins/scalar/
// vz_line_chart2/line-chart.ts` (resmoothDataset). A missing value stays missing (a gap, never a
// zero) and does not enter the average.

/** Largest weight we accept: at w = 1 the average never moves (and the debias divides by 0). */
export const MAX_SMOOTHING = 0.999;

/**
 * Smooths `values` with weight `weight` in [0, 1): 0 returns the values unchanged.
 * `null` and non-finite entries come back as `null` and are skipped by the average.
 */
export function debiasedEma(values: ReadonlyArray<number | null>, weight: number): (number | null)[] {
  const w = Math.min(Math.max(Number.isFinite(weight) ? weight : 0, 0), MAX_SMOOTHING);
  const out: (number | null)[] = new Array(values.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    if (w === 0) {
      out[i] = v;
      continue;
    }
    last = w * last + (1 - w) * v;
    n++;
    out[i] = last / (1 - w ** n);
  }
  return out;
}
