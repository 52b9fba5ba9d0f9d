// Metric storage: narrow rows (Metric) written in bulk, each write merging its points into the
// series' summary row (MetricSeries) and its rollup buckets (lib/db/metric-rollups.ts) in the same
// transaction; NaN / ±Infinity go beside them (MetricNonFinite). Also a run's points deleted or
// truncated after a step.
import { getRawDb, writeTransaction, type Fence, type RawDb } from "./raw";
import { dialect } from "./dialect";
import { pointsByKey, type KeyPoints, type MetricPoint } from "./metric-points";
import {
  addToAgg,
  bucketsOfIncreasing,
  greatest,
  least,
  rebuildRollups,
  recomputeBuckets,
  RollupRows,
  ROLLUP_LEVELS,
  RUN_SERIES,
  type Agg,
} from "./metric-rollups";

/**
 * Writes metric points of one run. A point at an existing (key, step) replaces the stored value
 * (and its buckets are recomputed). With a fence, nothing is written unless the job holds its lease.
 */
export function writeMetrics(runId: string, points: MetricPoint[], fence: Fence | null = null, db: RawDb = getRawDb()): { inserted: number; replaced: number } {
  return writeMetricsByKey(runId, pointsByKey(points), fence, db);
}

/** writeMetrics for points already grouped by key (what the ingest thread has). */
export function writeMetricsByKey(
  runId: string,
  keys: KeyPoints[],
  fence: Fence | null = null,
  db: RawDb = getRawDb(),
): { inserted: number; replaced: number } {
  return writeTransaction(fence, (db) => writeMetricsIn(db, runId, keys), db, { runId });
}

/** writeMetricsByKey inside a write transaction the caller holds on the run (no savepoint of its own: an idempotent ingest's). */
export function writeMetricsIn(db: RawDb, runId: string, keys: KeyPoints[]): { inserted: number; replaced: number } {
  const series = seriesOf(db, runId, keys);
  const out = series.length
    ? onlyNewPoints(db, series)
      ? appendPoints(db, runId, series)
      : writePointByPoint(db, runId, series)
    : { inserted: 0, replaced: 0 };
  const nf = writeNonFinite(db, runId, keys);
  return { inserted: out.inserted + nf.inserted, replaced: out.replaced + nf.replaced };
}

/**
 * The write's non-finite values go to MetricNonFinite (a value at a step there replaces the one
 * stored); a finite value written at a step that held a non-finite one replaces it (the row goes).
 * A run without non-finite values pays one indexed probe a write; one with some, one range query a
 * key (not one a point) to find the steps a finite value now replaces.
 */
function writeNonFinite(db: RawDb, runId: string, keys: KeyPoints[]): { inserted: number; replaced: number } {
  let inserted = 0;
  let replaced = 0;
  const anyNonFinite = keys.some((k) => k.nonFinite?.steps.length);
  if (!anyNonFinite && db.prepare(`SELECT 1 FROM "MetricNonFinite" WHERE "runId" = ? LIMIT 1`).get(runId) === undefined) return { inserted, replaced };
  const storedIn = db.prepare(`SELECT "step" FROM "MetricNonFinite" WHERE "runId" = ? AND "key" = ? AND "step" BETWEEN ? AND ?`).pluck();
  const drop = db.prepare(`DELETE FROM "MetricNonFinite" WHERE "runId" = ? AND "key" = ? AND "step" = ?`);
  const has = db.prepare(`SELECT 1 FROM "MetricNonFinite" WHERE "runId" = ? AND "key" = ? AND "step" = ?`);
  const finiteAt = db.prepare(`SELECT 1 FROM "Metric" m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ? AND s."key" = ? AND m."step" = ?`);
  const put = db.prepare(`INSERT INTO "MetricNonFinite" ("runId","key","step","value","wallTime") VALUES (?,?,?,?,?)
     ON CONFLICT ("runId","key","step") DO UPDATE SET "value" = excluded."value", "wallTime" = excluded."wallTime"`);
  let removedFinite = false;
  for (const k of keys) {
    if (k.steps.length) {
      let lo = Infinity;
      let hi = -Infinity;
      for (const step of k.steps) (lo = Math.min(lo, step)), (hi = Math.max(hi, step));
      const over = new Set(storedIn.all(runId, k.key, lo, hi) as number[]);
      for (const step of k.steps)
        if (over.delete(step)) {
          // a finite value written where a non-finite one was: a replacement, not a new point
          drop.run(runId, k.key, step);
          inserted--;
          replaced++;
        }
    }
    const nf = k.nonFinite;
    if (!nf) continue;
    for (let i = 0; i < nf.steps.length; i++) {
      // a non-finite value at a step that holds a finite one is the newer value: the finite point is removed
      if (finiteAt.get(runId, k.key, nf.steps[i]) !== undefined) {
        removeFinitePoint(db, runId, k.key, nf.steps[i]);
        removedFinite = true;
        replaced++;
      } else if (has.get(runId, k.key, nf.steps[i]) !== undefined) replaced++;
      else inserted++;
      put.run(runId, k.key, nf.steps[i], nf.values[i], nf.wallTimes[i]);
    }
  }
  if (removedFinite) rebuildRollups(db, runId); // once a write, however many points went
  return { inserted, replaced };
}

/** Removes one finite point (rare: a NaN logged over a value); the caller rebuilds the rollups. */
function removeFinitePoint(db: RawDb, runId: string, key: string, step: number): void {
  const id = db.prepare(`SELECT "id" FROM "MetricSeries" WHERE "runId" = ? AND "key" = ?`).pluck().get(runId, key) as number;
  db.prepare(`DELETE FROM "Metric" WHERE "seriesId" = ? AND "step" = ?`).run(id, step);
}

/** One key's points of a write with its MetricSeries row: the id its points are stored under, and the last step stored before this write (-1: a new series). */
interface SeriesPoints extends KeyPoints {
  id: number;
  lastStored: number;
}

/**
 * The series of a write's keys (keys without points left out), creating the missing ones. A new
 * series row starts as the key's first point with count 0, which mergeSeries then adds the write's
 * points to (that first point among them: nothing was stored before it, so it is inserted).
 */
function seriesOf(db: RawDb, runId: string, keys: KeyPoints[]): SeriesPoints[] {
  // every key's row in one statement: on PostgreSQL each statement is a round trip
  const d = dialect(db);
  const written = keys.filter((k) => k.steps.length).map((k) => k.key);
  const stored = new Map<string, { id: number; lastStep: number }>();
  if (written.length)
    for (const r of db
      .prepare(`SELECT "key", "id", "lastStep" FROM "MetricSeries" WHERE "runId" = ? AND ${d.inTextList(`"key"`)}`)
      .all(runId, d.textList(written)) as { key: string; id: number; lastStep: number }[])
      stored.set(r.key, r);
  const out: SeriesPoints[] = [];
  for (const k of keys) {
    if (!k.steps.length) continue;
    const row = stored.get(k.key);
    if (row) {
      out.push({ ...k, id: row.id, lastStored: row.lastStep });
      continue;
    }
    const [step, value] = [k.steps[0], k.values[0]];
    const id = db
      .prepare(
        `INSERT INTO "MetricSeries" ("runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue") VALUES (?,?,0,?,?,?,?,?) RETURNING "id"`,
      )
      .pluck()
      .get(runId, k.key, step, step, value, value, value) as number;
    out.push({ ...k, id, lastStored: -1 });
  }
  return out;
}

/**
 * True when no point of the write can meet a stored one or another of the write: each key's steps
 * strictly increase and none is at or below a stored step in its range. The common case (a trainer
 * logging forward) needs no query: the write starts after the series' last stored step. Then
 * appendPoints inserts without asking row by row.
 */
function onlyNewPoints(db: RawDb, series: SeriesPoints[]): boolean {
  const any = db.prepare(`SELECT 1 FROM "Metric" WHERE "seriesId" = ? AND "step" BETWEEN ? AND ? LIMIT 1`);
  for (const k of series) {
    const s = k.steps;
    for (let i = 1; i < s.length; i++) if (!(s[i] > s[i - 1])) return false;
    if (s[0] <= k.lastStored && any.get(k.id, s[0], s[s.length - 1]) !== undefined) return false;
  }
  return true;
}

/** Inserts points that onlyNewPoints cleared and merges their buckets into the rollups, all keys at once. */
function appendPoints(db: RawDb, runId: string, series: SeriesPoints[]): { inserted: number; replaced: number } {
  const rows: number[] = [];
  const rollups = new RollupRows();
  const aggs = new Map<SeriesPoints, Agg>();
  let inserted = 0;
  for (const k of series) {
    const { id, steps, values, wallTimes } = k;
    const n = steps.length;
    for (let i = 0; i < n; i++) rows.push(id, steps[i], values[i], wallTimes[i]);
    inserted += n;
    // steps increase: each level's buckets come one after another
    aggs.set(k, bucketsOfIncreasing(steps, values, wallTimes, (level, bucket, a) => rollups.add(id, level, bucket, a))!);
  }
  // a plain INSERT: a clash (impossible after onlyNewPoints) fails the transaction instead of passing silently
  dialect(db).insertTyped(db, `INSERT INTO "Metric" ("seriesId","step","value","wallTime")`, ["integer", "integer", "float8", "float8"], rows);
  rollups.merge(db);
  mergeSeries(db, runId, aggs);
  return { inserted, replaced: 0 };
}

/** Any write: point by point, a point at a stored (key, step) replacing it and its buckets recomputed. */
function writePointByPoint(db: RawDb, runId: string, series: SeriesPoints[]): { inserted: number; replaced: number } {
  const insert = db.prepare(`INSERT INTO "Metric" ("seriesId","step","value","wallTime") VALUES (?,?,?,?) ON CONFLICT DO NOTHING`);
  const replace = db.prepare(`UPDATE "Metric" SET "value" = ?, "wallTime" = ? WHERE "seriesId" = ? AND "step" = ?`);
  const rollups = new RollupRows();
  const aggs = new Map<SeriesPoints, Agg>();
  const dirty: [number, Set<number>][] = []; // series id, its replaced steps
  let inserted = 0;
  let total = 0;
  for (const k of series) {
    const { id, steps, values, wallTimes } = k;
    // level -> bucket -> aggregate of the NEW points
    const levels = new Map<number, Map<number, Agg>>(ROLLUP_LEVELS.map((l) => [l, new Map()]));
    const replaced = new Set<number>();
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i];
      const value = values[i];
      total++;
      if (insert.run(id, step, value, wallTimes[i]).changes === 1) {
        inserted++;
        for (const level of ROLLUP_LEVELS) {
          const buckets = levels.get(level)!;
          const b = Math.floor(step / level);
          buckets.set(b, addToAgg(buckets.get(b), step, value, wallTimes[i]));
        }
        aggs.set(k, addToAgg(aggs.get(k), step, value, wallTimes[i]));
      } else {
        replace.run(value, wallTimes[i], id, step);
        replaced.add(step);
      }
    }
    for (const [level, buckets] of levels) for (const [b, a] of buckets) rollups.add(id, level, b, a);
    if (replaced.size) dirty.push([id, replaced]);
  }
  rollups.merge(db);
  mergeSeries(db, runId, aggs);
  for (const [id, steps] of dirty) recomputeBuckets(db, id, steps);
  return { inserted, replaced: total - inserted };
}

/** Adds each series' aggregate of the write's new points to its summary row (which seriesOf made sure exists). */
function mergeSeries(db: RawDb, runId: string, aggs: Map<SeriesPoints, Agg>): void {
  const rows: (number | string)[] = [];
  for (const [k, a] of aggs) rows.push(k.id, runId, k.key, a.count, a.firstStep, a.lastStep, a.lastValue, a.minValue, a.maxValue);
  dialect(db).insertTyped(
    db,
    `INSERT INTO "MetricSeries" AS o ("id","runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue")`,
    ["integer", "text", "text", "integer", "integer", "integer", "float8", "float8", "float8"],
    rows,
    `ON CONFLICT("id") DO UPDATE SET
       "count" = o."count" + excluded."count",
       "minValue" = ${least(`o."minValue"`, `excluded."minValue"`)},
       "maxValue" = ${greatest(`o."maxValue"`, `excluded."maxValue"`)},
       "firstStep" = ${least(`o."firstStep"`, `excluded."firstStep"`)},
       "lastValue" = CASE WHEN excluded."lastStep" >= o."lastStep" THEN excluded."lastValue" ELSE o."lastValue" END,
       "lastStep" = ${greatest(`o."lastStep"`, `excluded."lastStep"`)}`,
  );
}

/** Metric rows have no foreign key (cheap bulk writes): deleting a run removes them here, before the run's series go with it. */
export function deleteRunMetrics(runId: string, db: RawDb = getRawDb()): void {
  writeTransaction(
    null,
    (db) => {
      db.prepare(`DELETE FROM "Metric" WHERE "seriesId" IN (${RUN_SERIES})`).run(runId);
      db.prepare(`DELETE FROM "MetricRollup" WHERE "seriesId" IN (${RUN_SERIES})`).run(runId);
    },
    db,
    { runId },
  );
}

/**
 * Deletes a run's points after `step` and rebuilds its rollups and summaries from the rows left.
 * A series keeps its id (a writer may hold it); one left without points is deleted.
 */
export function truncateMetricsAfter(runId: string, step: number, db: RawDb): void {
  db.prepare(`DELETE FROM "Metric" WHERE "seriesId" IN (${RUN_SERIES}) AND "step" > ?`).run(runId, step);
  db.prepare(`DELETE FROM "MetricNonFinite" WHERE "runId" = ? AND "step" > ?`).run(runId, step);
  rebuildRollups(db, runId);
}
