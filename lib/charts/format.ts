// Number and time labels shared by every chart, heatmap legend and tooltip.

const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 2 });

/** Short tick and value labels: 6.3K, 0.0292, 1.2e-5, "—" for a missing value. */
export function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "-∞";
  if (v === 0) return "0";
  if (Math.abs(v) >= 1000) return compact.format(v);
  if (Math.abs(v) < 1e-3) return v.toExponential(1);
  return Number(v.toPrecision(3)).toString();
}

/** A signed value with a fixed number of decimals (advantages in tooltips and cells). */
export function fmtSigned(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  const s = v.toFixed(digits);
  if (Number(s) === 0) return (0).toFixed(digits); // no "-0.000"
  return v > 0 ? `+${s}` : s;
}

/**
 * Seconds as a compact duration: 45s, 12m 05s, 3h 04m. `decimals` keeps fractions of a second
 * under a minute (2.5s), for runs that last seconds; `round` drops a zero last part (1m, 2h), for
 * ticks on whole minutes and hours.
 */
export function fmtDuration(seconds: number, { decimals = 0, round = false } = {}): string {
  if (!Number.isFinite(seconds)) return "—";
  const exact = Math.max(0, seconds);
  if (decimals > 0 && exact < 59.5) return `${exact.toFixed(decimals)}s`;
  const s = Math.round(exact);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return round && s % 60 === 0 ? `${m}m` : `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  return round && m % 60 === 0 ? `${h}h` : `${h}h ${String(m % 60).padStart(2, "0")}m`;
}

/** Duration tick labels as precise as the tick step: 0.5s 1.0s 1.5s (never "0s 1s 1s 2s"), 1m 2m, 1h 2h. */
export function durationTickFormat(ticks: readonly number[]): (v: number) => string {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 0;
  const decimals = step > 0 && step < 1 ? Math.min(3, Math.ceil(-Math.log10(step) - 1e-9)) : 0;
  return (v) => fmtDuration(v, { decimals, round: true });
}

/**
 * A tick formatter for round ticks: as many decimals as the tick step needs (so 1.879 and 1.881
 * do not both read "1.88"), compact notation for large values.
 */
export function tickFormat(ticks: readonly number[]): (v: number) => string {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 0;
  const big = ticks.some((t) => Math.abs(t) >= 1000);
  if (!(step > 0) || big) return fmt;
  // the fewest decimals that write every tick exactly (0.25 needs 2, 1.5 needs 1)
  let decimals = 0;
  while (decimals < 8 && ticks.some((t) => Math.abs(t * 10 ** decimals - Math.round(t * 10 ** decimals)) > 1e-6 * 10 ** decimals)) decimals++;
  if (step < 1e-4) return (v) => (v === 0 ? "0" : v.toExponential(1));
  return (v) => (v === 0 ? "0" : v.toFixed(decimals));
}
