// Reading a run's metric keys and a chart's series, downsampled (W&B/Trackio-style): at most
// `maxPoints` points as min/max buckets whose width (`stride`) is a power of two chosen from the
// series' step range. Buckets are aligned to multiples of the stride, so while a run grows the
// stride stays the same until the range doubles and old buckets never move: live charts don't
// jump. The first and last points are always kept. A stride of 16 or more reads MetricRollup
// (lib/db/metric-rollups.ts) instead of the points.
import type { MetricKeyInfo, NonFiniteText, Series } from "../schemas/metrics";
import { assertRunExists, getRawDb, type RawDb } from "./raw";
import { dialect } from "./dialect";
import { ROLLUP_LEVELS } from "./metric-rollups";

export interface SeriesOptions {
  maxPoints?: number;
  /** the client already has points up to this step (live cursor) */
  after?: number;
  /** the stride the client's points were fetched with */
  stride?: number;
}

/** The API's series response (lib/schemas/metrics.ts), wall times always present here. */
export type SeriesResult = Series & { wallTimes: number[] };

/**
 * The smallest power-of-two stride whose aligned buckets (2 points each) plus the kept first and
 * last points fit in maxPoints. Grows monotonically with the step range: stable while live.
 */
export function chooseStride(firstStep: number, lastStep: number, maxPoints: number): number {
  const buckets = (s: number) => Math.floor(lastStep / s) - Math.floor(firstStep / s) + 1;
  // Stride 1 means raw points: one point per step, no min/max pair.
  if (lastStep - firstStep + 1 <= maxPoints) return 1;
  let s = 2;
  while (2 * buckets(s) + 2 > maxPoints) s *= 2;
  return s;
}

export type SeriesInfo = MetricKeyInfo;

export function listSeries(runId: string, db: RawDb = getRawDb()): SeriesInfo[] {
  return db
    .prepare(`SELECT "key","count","firstStep","lastStep","lastValue","minValue","maxValue" FROM "MetricSeries" WHERE "runId" = ? ORDER BY "key"`)
    .all(runId) as SeriesInfo[];
}

/**
 * A chart's points of one key (NotFoundError when the run does not exist). Two statements when the
 * series exists (its row, its buckets): on PostgreSQL each statement is a round trip, so whether the
 * run exists and whether the key has non-finite points come with the series row.
 */
export function readSeries(runId: string, key: string, opts: SeriesOptions = {}, db: RawDb = getRawDb()): SeriesResult {
  const maxPoints = opts.maxPoints ?? 1500;
  const meta = db
    .prepare(`SELECT "id","count","firstStep","lastStep",
            EXISTS (SELECT 1 FROM "MetricNonFinite" n WHERE n."runId" = s."runId" AND n."key" = s."key") AS "nonFinite"
     FROM "MetricSeries" s WHERE s."runId" = ? AND s."key" = ?`)
    .get(runId, key) as { id: number; count: number; firstStep: number; lastStep: number; nonFinite: unknown } | undefined;
  if (!meta) {
    // no finite point under this key: the run must exist, and the key's non-finite points are all it has
    assertRunExists(runId, db);
    const nonFinite = nonFiniteOf(runId, key, 0, 1000, db);
    return { key, stride: 1, reset: true, fromStep: 0, count: 0, steps: [], values: [], wallTimes: [], ...(nonFinite.length ? { nonFinite } : {}) };
  }
  const stride = chooseStride(meta.firstStep, meta.lastStep, maxPoints);
  const reset = opts.after === undefined || opts.stride === undefined || opts.stride !== stride;
  const fromStep = reset ? 0 : Math.floor(opts.after! / stride) * stride;
  // [step, value, wall time]: a downsampled point's wall time is stored beside it (MetricRollup's
  // minWallTime/maxWallTime), so a chart is read without looking its points up again in Metric.
  const points: [number, number, number][] = [];

  if (stride === 1) {
    for (const r of db
      .prepare(`SELECT "step","value","wallTime" FROM "Metric" WHERE "seriesId" = ? AND "step" >= ? ORDER BY "step"`)
      .raw()
      .iterate(meta.id, fromStep) as Iterable<[number, number, number]>)
      points.push(r);
  } else {
    // The coarsest stored level that is not wider than the stride (1 = raw rows).
    const level = [...ROLLUP_LEVELS].reverse().find((l) => l <= stride) ?? 1;
    const ratio = stride / level;
    // each group's minimum and maximum: [step, value, wall time] twice
    const extremes: [number, number, number, number, number, number][] = [];
    if (level > 1 && ratio === 1) {
      // the stride is a stored level (16, 256 ...): each rollup row is a group, its extremes stored in it
      for (const r of db
        .prepare(
          `SELECT "minStep","minValue","minWallTime","maxStep","maxValue","maxWallTime" FROM "MetricRollup" WHERE "seriesId" = ? AND "level" = ? AND "bucket" >= ? ORDER BY "bucket"`,
        )
        .raw()
        .iterate(meta.id, level, fromStep / level) as Iterable<[number, number, number, number, number, number]>)
        extremes.push(r);
    } else {
      // groups of `ratio` rows: the rows holding each one's minimum and maximum (lib/db/dialect.ts bucketExtremes)
      const d = dialect(db);
      const cols = (side: "min" | "max"): [string, string, string] =>
        level === 1 ? ["step", "value", "wallTime"] : [`${side}Step`, `${side}Value`, `${side}WallTime`];
      const sql = d.bucketExtremes({
        table: level === 1 ? "Metric" : "MetricRollup",
        groupCol: level === 1 ? "step" : "bucket",
        ratio,
        levelCond: level === 1 ? "" : `AND "level" = ${level}`,
        min: cols("min"),
        max: cols("max"),
      });
      const args = d.bucketArgs(meta.id, level === 1 ? fromStep : fromStep / level);
      const rows = db
        .prepare(sql)
        .raw()
        .all(...args) as [isMax: number, step: number, value: number, wall: number][];
      // the minima and the maxima, each in group order (one statement, one snapshot: one of each a group)
      const maxs = rows.filter((r) => r[0] === 1);
      let i = 0;
      for (const r of rows) if (r[0] === 0) extremes.push([r[1], r[2], r[3], maxs[i][1], maxs[i][2], maxs[i++][3]]);
    }
    // both in step order, once when they are the same point
    for (const [s0, v0, w0, s1, v1, w1] of extremes) {
      if (s0 === s1) points.push([s0, v0, w0]);
      else if (s0 < s1) points.push([s0, v0, w0], [s1, v1, w1]);
      else points.push([s1, v1, w1], [s0, v0, w0]);
    }
    // Keep the very first and the last point whatever the buckets chose.
    const pointAt = db.prepare(`SELECT "step","value","wallTime" FROM "Metric" WHERE "seriesId" = ? AND "step" = ?`).raw();
    if (reset && points.length && points[0][0] !== meta.firstStep) points.unshift(pointAt.get(meta.id, meta.firstStep) as [number, number, number]);
    if (points.length && points[points.length - 1][0] !== meta.lastStep) points.push(pointAt.get(meta.id, meta.lastStep) as [number, number, number]);
  }
  return {
    key,
    stride,
    reset,
    fromStep,
    count: meta.count,
    steps: points.map((p) => p[0]),
    values: points.map((p) => p[1]),
    wallTimes: points.map((p) => p[2]),
    ...(meta.nonFinite ? nonFiniteField(runId, key, fromStep, db) : {}),
  };
}

function nonFiniteField(runId: string, key: string, fromStep: number, db: RawDb): { nonFinite?: { step: number; value: NonFiniteText }[] } {
  const nonFinite = nonFiniteOf(runId, key, fromStep, 1000, db);
  return nonFinite.length ? { nonFinite } : {};
}

/** A run's non-finite values of `key` at or after `fromStep` (at most `limit`), in step order. */
export function nonFiniteOf(runId: string, key: string, fromStep = 0, limit = 1000, db: RawDb = getRawDb()): { step: number; value: NonFiniteText }[] {
  return db
    .prepare(`SELECT "step","value" FROM "MetricNonFinite" WHERE "runId" = ? AND "key" = ? AND "step" >= ? ORDER BY "step" LIMIT ?`)
    .all(runId, key, fromStep, limit) as {
    step: number;
    value: NonFiniteText;
  }[];
}
