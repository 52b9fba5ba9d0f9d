// Prepares one stored (downsampled) metric series for drawing: x-axis choice, debiased EMA
// smoothing, log scale. Pure: components/charts only draw what this returns.
import { debiasedEma } from "./ema";
import { niceScale, niceStep } from "./domain";

/**
 * Points per grid chart: min and max of ~150 buckets across a ~350 px plot area (a bucket about
 * two pixels wide), so spikes stay visible while a page of dozens of charts stays fast.
 */
export const CHART_POINTS = 300;

/** Charts whose points the run page sends with its HTML (the first screens); the rest load as they scroll into view. */
export const PREFETCH_CHARTS = 24;

/** step: the logged step; env: an environment-step counter logged as its own metric; wall: seconds since the run's first point. */
export type XAxisKind = "step" | "env" | "wall";

export interface SeriesLike {
  steps: number[];
  values: number[];
  /** epoch seconds, NaN where unknown */
  wallTimes?: number[];
}

export interface ChartPoint {
  x: number;
  step: number;
  /** stored value; null = a gap (hidden on log scale) */
  y: number | null;
  /** smoothed value (null when smoothing is off or the value is a gap) */
  ySmooth: number | null;
}

export interface PreparedSeries {
  points: ChartPoint[];
  /** points dropped because the x value is unknown (no env-step counter at that step, unknown wall time) */
  droppedNoX: number;
  /** values <= 0 hidden on a log scale */
  hiddenNonPositive: number;
}

export interface PrepareOptions {
  x?: XAxisKind;
  /** EMA weight in [0, 1); 0 = off */
  smoothing?: number;
  log?: boolean;
  /** the env-step counter series, for x = "env" */
  envSteps?: SeriesLike;
  /** wall-time origin for x = "wall" (epoch seconds); default the series' first wall time */
  wallOrigin?: number;
}

/** Metric keys recognised as an environment-step counter (cumulative), in order of preference. */
export const ENV_STEP_KEYS = ["rollout/env_steps", "train/env_steps", "env_steps", "rollout/total_env_steps", "total_env_steps", "eval/env_steps"];

/** The env-step counter key among a run's metric keys, or null. */
export function envStepKey(keys: readonly string[]): string | null {
  for (const k of ENV_STEP_KEYS) if (keys.includes(k)) return k;
  return keys.find((k) => /(^|\/)(total_)?env_steps(_total)?$/.test(k)) ?? null;
}

/**
 * Linear interpolation of y(x) at `at` over points sorted by x; null outside [x0, xN] (no
 * extrapolation: a value we did not store is not invented beyond the data).
 */
export function interpolate(xs: readonly number[], ys: ReadonlyArray<number | null>, at: number): number | null {
  const n = xs.length;
  if (n === 0 || at < xs[0] || at > xs[n - 1]) return null;
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= at) lo = mid;
    else hi = mid;
  }
  if (xs[lo] === at) return ys[lo] ?? null;
  if (xs[hi] === at) return ys[hi] ?? null;
  const a = ys[lo];
  const b = ys[hi];
  if (a === null || b === null || a === undefined || b === undefined) return null;
  const f = (at - xs[lo]) / (xs[hi] - xs[lo]);
  return a + (b - a) * f;
}

export function prepareSeries(s: SeriesLike, opts: PrepareOptions = {}): PreparedSeries {
  const xKind = opts.x ?? "step";
  const smooth = opts.smoothing && opts.smoothing > 0 ? debiasedEma(s.values, opts.smoothing) : null;
  const origin = opts.wallOrigin ?? s.wallTimes?.find((t) => Number.isFinite(t));
  const points: ChartPoint[] = [];
  let droppedNoX = 0;
  let hiddenNonPositive = 0;
  for (let i = 0; i < s.steps.length; i++) {
    let x: number | null = s.steps[i];
    if (xKind === "wall") {
      const t = s.wallTimes?.[i];
      x = t !== undefined && Number.isFinite(t) && origin !== undefined ? t - origin : null;
    } else if (xKind === "env") {
      x = opts.envSteps ? interpolate(opts.envSteps.steps, opts.envSteps.values, s.steps[i]) : null;
    }
    if (x === null) {
      droppedNoX++;
      continue;
    }
    let y: number | null = Number.isFinite(s.values[i]) ? s.values[i] : null;
    let ys = smooth ? smooth[i] : null;
    if (opts.log) {
      if (y !== null && y <= 0) {
        y = null;
        hiddenNonPositive++;
      }
      if (ys !== null && ys <= 0) ys = null;
    }
    points.push({ x, step: s.steps[i], y, ySmooth: ys });
  }
  // Wall time and env steps need not grow with the step everywhere: draw in x order.
  if (xKind !== "step") points.sort((a, b) => a.x - b.x || a.step - b.step);
  return { points, droppedNoX, hiddenNonPositive };
}

export interface AxisScale {
  domain: [number, number];
  ticks: number[];
}

/** Round ticks inside [min, max] (the x axis spans exactly the data); whole numbers for steps. */
export function ticksWithin(min: number, max: number, integer = false, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max <= min) return [min];
  let step = niceStep((max - min) / (count - 1));
  if (integer) step = Math.max(1, Math.round(step));
  return stepsWithin(min, max, step);
}

// Tick steps a clock reads: 1-2-5 below a second, then 1 2 5 10 15 30 s, 1 2 5 10 15 30 min, 1 2 3 6 12 h.
const CLOCK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

/** Ticks for a span of seconds on steps a clock reads (15s, 30s, 5m, 1h …), not 40s or 200s. */
export function durationTicksWithin(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max <= min) return [min];
  const raw = (max - min) / (count - 1);
  const step = raw < 1 ? niceStep(raw) : (CLOCK_STEPS.find((s) => s >= raw * 0.75) ?? 86400 * niceStep(raw / 86400));
  return stepsWithin(min, max, step);
}

function stepsWithin(min: number, max: number, step: number): number[] {
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toFixed(digits)));
  return out;
}

/** Powers of ten inside [min, max] for a log axis (at least the two ends). */
export function logTicks(min: number, max: number): number[] {
  const out: number[] = [];
  for (let e = Math.ceil(Math.log10(min)); 10 ** e <= max * (1 + 1e-9); e++) out.push(Number((10 ** e).toPrecision(12)));
  return out.length >= 2 ? out : [min, max];
}

/**
 * The axes of a metric chart: x spans the data with round ticks; y is a padded round domain
 * (log: the positive data range with decade ticks). Shared by the static first paint and the
 * interactive Recharts chart, so swapping one for the other does not move anything.
 */
export function chartScales(points: readonly ChartPoint[], opts: { log?: boolean; x?: XAxisKind } = {}): { x: AxisScale; y: AxisScale } | null {
  if (points.length === 0) return null;
  let xmin = Infinity;
  let xmax = -Infinity;
  const ys: number[] = [];
  for (const p of points) {
    if (p.x < xmin) xmin = p.x;
    if (p.x > xmax) xmax = p.x;
    if (p.y !== null) ys.push(p.y);
    if (p.ySmooth !== null) ys.push(p.ySmooth);
  }
  const x: AxisScale = {
    domain: xmax > xmin ? [xmin, xmax] : [xmin - 1, xmax + 1],
    ticks: opts.x === "wall" ? durationTicksWithin(xmin, xmax) : ticksWithin(xmin, xmax, opts.x === "step"),
  };
  if (opts.log) {
    const pos = ys.filter((v) => v > 0);
    if (!pos.length) return null;
    const lo = Math.min(...pos);
    const hi = Math.max(...pos);
    const d: [number, number] = hi > lo ? [lo, hi] : [lo / 2, hi * 2];
    return { x, y: { domain: d, ticks: logTicks(d[0], d[1]) } };
  }
  const y = niceScale(ys);
  return y ? { x, y } : null;
}
