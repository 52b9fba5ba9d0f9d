// Compare runs: group them by a config key, align their curves on one x grid and draw the mean
// with a band over the runs of each group (W&B-style grouping: min-max, std or standard error);
// and the config diff table. Pure: components/charts only draw.
import { interpolate } from "./prepare-series";
import { pointLabel, type SweepParams } from "../schemas/sweeps";

export type BandKind = "minmax" | "std" | "stderr";

/** The run fields grouping and the diff table read (a subset of the API's Run). */
export interface RunLike {
  id: string;
  name: string;
  kind?: string;
  jobKind?: string | null;
  envId?: string | null;
  estimator?: string | null;
  seed?: number;
  tags?: string[];
  config?: unknown;
  sweepParams?: SweepParams | null;
}

/** The group key of a sweep's runs: by their grid point (every varied param but the seed). */
export const SWEEP_GROUP = "sweep";

/** Run columns offered as group keys besides `config.<path>`. */
export const RUN_GROUP_FIELDS = ["estimator", "envId", "kind", "jobKind", "seed"] as const;

/** The value of a group key on a run: a run column, or `config.<dotted path>` into its config. */
export function runField(run: RunLike, key: string): unknown {
  if (key.startsWith("config.")) {
    let v: unknown = run.config;
    for (const part of key.slice("config.".length).split(".")) {
      if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
      v = (v as Record<string, unknown>)[part];
    }
    return v;
  }
  return (run as unknown as Record<string, unknown>)[key];
}

export function displayValue(v: unknown): string {
  if (v === undefined) return "(none)";
  if (v === null) return "null";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

export interface RunGroup {
  /** "estimator=gigpo", or the run's name when not grouping */
  label: string;
  value: string;
  runIds: string[];
}

/** Groups in order of first appearance; `key` null gives one group per run. */
export function groupRuns(runs: readonly RunLike[], key: string | null): RunGroup[] {
  if (!key) return runs.map((r) => ({ label: r.name, value: r.id, runIds: [r.id] }));
  const out = new Map<string, RunGroup>();
  for (const r of runs) {
    if (key === SWEEP_GROUP) {
      const value = r.sweepParams ? pointLabel(r.sweepParams.point) : "(not in a sweep)";
      if (!out.has(value)) out.set(value, { label: value, value, runIds: [] });
      out.get(value)!.runIds.push(r.id);
      continue;
    }
    const value = displayValue(runField(r, key));
    let g = out.get(value);
    if (!g) {
      g = { label: `${key.replace(/^config\./, "")}=${value}`, value, runIds: [] };
      out.set(value, g);
    }
    g.runIds.push(r.id);
  }
  return [...out.values()];
}

export interface XYSeries {
  x: number[];
  y: (number | null)[];
}

export interface Aggregate {
  mean: (number | null)[];
  /** band bounds; null where no run has a value */
  lo: (number | null)[];
  hi: (number | null)[];
  /** runs with a value at each grid point */
  n: number[];
}

/**
 * The common x grid: the union of every series' x when it is small, else `maxPoints` evenly
 * spaced values over the union's range.
 */
export function commonGrid(series: readonly XYSeries[], maxPoints = 600): number[] {
  const all = new Set<number>();
  let min = Infinity;
  let max = -Infinity;
  for (const s of series)
    for (const x of s.x) {
      if (!Number.isFinite(x)) continue;
      all.add(x);
      if (x < min) min = x;
      if (x > max) max = x;
    }
  if (all.size <= maxPoints) return [...all].sort((a, b) => a - b);
  const out: number[] = new Array(maxPoints);
  for (let i = 0; i < maxPoints; i++) out[i] = min + ((max - min) * i) / (maxPoints - 1);
  return out;
}

/**
 * Mean and band over runs at each grid x. A run contributes where the grid x lies inside its own
 * x range (linear interpolation between its stored points, no extrapolation); where no run has a
 * value the mean is null (a gap). std is the sample std (n - 1); with one run the band is the
 * mean itself. stderr = std / sqrt(n).
 */
export function aggregate(series: readonly XYSeries[], grid: readonly number[], band: BandKind): Aggregate {
  const mean: (number | null)[] = [];
  const lo: (number | null)[] = [];
  const hi: (number | null)[] = [];
  const n: number[] = [];
  const sorted = series.map((s) => {
    // interpolate() needs x ascending
    const idx = s.x.map((_, i) => i).sort((a, b) => s.x[a] - s.x[b]);
    return { x: idx.map((i) => s.x[i]), y: idx.map((i) => s.y[i]) };
  });
  for (const x of grid) {
    const vals: number[] = [];
    for (const s of sorted) {
      const v = interpolate(s.x, s.y, x);
      if (v !== null && Number.isFinite(v)) vals.push(v);
    }
    n.push(vals.length);
    if (vals.length === 0) {
      mean.push(null), lo.push(null), hi.push(null);
      continue;
    }
    const m = vals.reduce((a, b) => a + b, 0) / vals.length;
    mean.push(m);
    if (band === "minmax") {
      lo.push(Math.min(...vals));
      hi.push(Math.max(...vals));
    } else {
      const sd = vals.length > 1 ? Math.sqrt(vals.reduce((a, v) => a + (v - m) * (v - m), 0) / (vals.length - 1)) : 0;
      const w = band === "std" ? sd : sd / Math.sqrt(vals.length);
      lo.push(m - w);
      hi.push(m + w);
    }
  }
  return { mean, lo, hi, n };
}

/** Flattens a config into dotted paths; arrays and empty objects are leaves (shown as JSON). */
export function flattenConfig(config: unknown, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const walk = (v: unknown, path: string) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 0) {
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) walk(x, path ? `${path}.${k}` : k);
    } else if (path) out[path] = v;
  };
  walk(config, prefix);
  return out;
}

export interface DiffRow {
  key: string;
  values: string[];
  differs: boolean;
}

/**
 * One row per run field and config path (union over the runs), the runs' values as text, and
 * whether they differ; differing rows first, then alphabetical.
 */
export function configDiff(runs: readonly RunLike[]): DiffRow[] {
  const flat = runs.map((r) => ({
    envId: r.envId,
    estimator: r.estimator,
    seed: r.seed,
    kind: r.kind,
    jobKind: r.jobKind,
    tags: r.tags?.length ? r.tags.join(", ") : undefined,
    ...flattenConfig(r.config, "config"),
  }));
  const keys = new Set<string>();
  for (const f of flat) for (const [k, v] of Object.entries(f)) if (v !== undefined) keys.add(k);
  const rows: DiffRow[] = [...keys].map((key) => {
    const values = flat.map((f) => displayValue((f as Record<string, unknown>)[key]));
    return { key, values, differs: values.some((v) => v !== values[0]) };
  });
  return rows.sort((a, b) => Number(b.differs) - Number(a.differs) || a.key.localeCompare(b.key));
}
