// Y-axis domains: padded around the data, and never a magnified view of floating-point noise
// (a batch mean of 1e-17 is drawn as the flat zero it is, not as a dramatic curve).

/**
 * [lo, hi] covering the finite values with 5 % padding; a (near-)constant series gets a span of
 * 10 % of its magnitude (at least 1e-3) around it. `clamp` keeps the domain inside fixed bounds
 * (e.g. [0, 1] for shares). null when there is no finite value.
 */
export function paddedDomain(values: Iterable<number | null | undefined>, clamp?: [number, number]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) return null;
  const mag = Math.max(Math.abs(lo), Math.abs(hi));
  const span = hi - lo;
  if (span <= Math.max(1e-9 * mag, 1e-12)) {
    const half = Math.max(mag * 0.1, 1e-3);
    const mid = Math.abs(lo) < 1e-12 ? 0 : (lo + hi) / 2;
    lo = mid - half;
    hi = mid + half;
  } else {
    // pad, but do not cross zero for one-signed data (a count or a rate starts at its floor)
    lo = lo >= 0 ? Math.max(0, lo - span * 0.05) : lo - span * 0.05;
    hi = hi <= 0 ? Math.min(0, hi + span * 0.05) : hi + span * 0.05;
  }
  if (clamp) {
    lo = Math.max(clamp[0], lo);
    hi = Math.min(clamp[1], hi);
  }
  return [lo, hi];
}

/** The round step (1, 2 or 5 x 10^k) nearest to `raw` (Heckbert, "Nice numbers for graph labels", Graphics Gems 1990). */
export function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

/**
 * A padded domain widened to round bounds, and its ticks (about `count` of them, on multiples of
 * a round step), so axes read 0.2, 0.4 … rather than 0.181, 0.216 ….
 */
export function niceScale(
  values: Iterable<number | null | undefined>,
  clamp?: [number, number],
  count = 5,
): { domain: [number, number]; ticks: number[] } | null {
  const d = paddedDomain(values, clamp);
  if (!d) return null;
  const step = niceStep((d[1] - d[0]) / Math.max(1, count - 1));
  let lo = Math.floor(d[0] / step) * step;
  let hi = Math.ceil(d[1] / step) * step;
  if (clamp) {
    lo = Math.max(clamp[0], lo);
    hi = Math.min(clamp[1], hi);
  }
  const ticks: number[] = [];
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  for (let v = lo; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toFixed(digits)));
  return { domain: [Number(lo.toFixed(digits)), Number(hi.toFixed(digits))], ticks };
}
