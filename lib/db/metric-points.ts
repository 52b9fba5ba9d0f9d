// Metric points as a write takes them: one object a point (MetricPoint), or grouped by key as
// columns (KeyPoints) with a key's NaN / ±Infinity values set apart, since those are stored beside
// the series (MetricNonFinite) rather than in it. No SQL: lib/db/metric-writes.ts stores them.
import type { LogMetrics, NonFiniteText } from "../schemas/metrics";

export interface MetricPoint {
  key: string;
  step: number;
  value: number;
  /** epoch seconds */
  wallTime: number;
}

/** One key's points of a write, in the order given. */
export interface KeyPoints {
  key: string;
  steps: number[];
  values: number[];
  wallTimes: number[];
  /** the key's non-finite values of the write, stored beside the series (MetricNonFinite) */
  nonFinite?: { steps: number[]; values: NonFiniteText[]; wallTimes: number[] };
}

/** NaN / ±Infinity as the text a JSON body and the MetricNonFinite table carry. */
export function nonFiniteText(v: number): NonFiniteText {
  return Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
}

function pushNonFinite(k: KeyPoints, step: number, value: NonFiniteText, wallTime: number): void {
  k.nonFinite ??= { steps: [], values: [], wallTimes: [] };
  const nf = k.nonFinite;
  nf.steps.push(step);
  nf.values.push(value);
  nf.wallTimes.push(wallTime);
}

/** Points grouped by key (the Metric table's order), each key's points in the order given. */
export function pointsByKey(points: MetricPoint[]): KeyPoints[] {
  const m = new Map<string, KeyPoints>();
  for (const p of points) {
    let k = m.get(p.key);
    if (!k) {
      k = { key: p.key, steps: [], values: [], wallTimes: [] };
      m.set(p.key, k);
    }
    if (!Number.isFinite(p.value)) {
      pushNonFinite(k, p.step, nonFiniteText(p.value), p.wallTime);
      continue;
    }
    k.steps.push(p.step);
    k.values.push(p.value);
    k.wallTimes.push(p.wallTime);
  }
  return [...m.values()];
}

/** An ingest body of either shape (lib/schemas/metrics.ts) by key; `now` (epoch seconds) stands in for a missing wall time. */
export function metricBodyByKey(input: LogMetrics, now: number): KeyPoints[] {
  if (!("steps" in input))
    return pointsByKey(
      input.points.flatMap((p) =>
        Object.entries(p.values).map(([key, value]) => ({
          key,
          step: p.step,
          value: typeof value === "string" ? Number(value) : value,
          wallTime: p.wallTime ?? now,
        })),
      ),
    );
  const { steps, wallTimes, values } = input;
  let walls: number[] | undefined;
  return Object.keys(values).map((key) => {
    const col = values[key];
    // a column of numbers only (what a trainer logs every step) is its points as they came: no copy
    let plain = true;
    for (let i = 0; i < col.length && plain; i++) plain = typeof col[i] === "number";
    if (plain) {
      walls ??= wallTimes ?? steps.map(() => now);
      return { key, steps, values: col as number[], wallTimes: walls };
    }
    const k: KeyPoints = { key, steps: [], values: [], wallTimes: [] };
    for (let i = 0; i < col.length; i++) {
      const v = col[i];
      if (v === null) continue;
      if (typeof v === "string") {
        pushNonFinite(k, steps[i], v, wallTimes ? wallTimes[i] : now);
        continue;
      }
      k.steps.push(steps[i]);
      k.values.push(v);
      k.wallTimes.push(wallTimes ? wallTimes[i] : now);
    }
    return k;
  });
}
