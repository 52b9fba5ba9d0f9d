// MetricRollup: a series' points pre-aggregated into min/max buckets at widths 16, 256, 4096 and
// 65536. A GROUP BY over 10^6 rows costs ~250 ms in SQLite, so the writes (lib/db/metric-writes.ts)
// merge each write's buckets in, and a chart read (lib/db/metric-series.ts) aggregates the coarsest
// rollup not wider than its stride (at most 16 rollup rows per output bucket). Here: the levels,
// a bucket's aggregate, its upsert, and the rebuilds from the Metric rows after a replacement or
// a truncation.
import type { RawDb } from "./raw";
import { dialect } from "./dialect";

export const ROLLUP_LEVELS = [16, 256, 4096, 65536] as const;

/** The aggregate of some points of one series: a bucket's, or a write's (its summary row's). */
export interface Agg {
  count: number;
  minStep: number;
  minValue: number;
  minWallTime: number;
  maxStep: number;
  maxValue: number;
  maxWallTime: number;
  firstStep: number;
  lastStep: number;
  lastValue: number;
}

export function addToAgg(agg: Agg | undefined, step: number, value: number, wallTime: number): Agg {
  if (!agg)
    return {
      count: 1,
      minStep: step,
      minValue: value,
      minWallTime: wallTime,
      maxStep: step,
      maxValue: value,
      maxWallTime: wallTime,
      firstStep: step,
      lastStep: step,
      lastValue: value,
    };
  agg.count++;
  if (value < agg.minValue) (agg.minValue = value), (agg.minStep = step), (agg.minWallTime = wallTime);
  if (value > agg.maxValue) (agg.maxValue = value), (agg.maxStep = step), (agg.maxWallTime = wallTime);
  if (step < agg.firstStep) agg.firstStep = step;
  if (step >= agg.lastStep) (agg.lastStep = step), (agg.lastValue = value);
  return agg;
}

/**
 * Adds `b`, the aggregate of points all after `a`'s, into `a` (whose first step stays): what addToAgg
 * over b's points in step order would make of it (ties keep the earlier minimum and maximum, as it does).
 */
export function appendAgg(a: Agg, b: Agg): Agg {
  a.count += b.count;
  if (b.minValue < a.minValue) (a.minValue = b.minValue), (a.minStep = b.minStep), (a.minWallTime = b.minWallTime);
  if (b.maxValue > a.maxValue) (a.maxValue = b.maxValue), (a.maxStep = b.maxStep), (a.maxWallTime = b.maxWallTime);
  if (b.lastStep >= a.lastStep) (a.lastStep = b.lastStep), (a.lastValue = b.lastValue);
  return a;
}

/**
 * The rollup buckets of one series' points in increasing step order, level by level: the finest from
 * the points, each coarser one from the buckets below it (a level's width is a multiple of the one
 * below), so each point is looked at once, not once a level. Calls `out` per bucket, finest level
 * first (it reads the aggregate at once: it is changed afterwards); returns the aggregate of all
 * the points (undefined for none).
 */
export function bucketsOfIncreasing(
  steps: number[],
  values: number[],
  wallTimes: number[],
  out: (level: number, bucket: number, a: Agg) => void,
): Agg | undefined {
  let below: [bucket: number, agg: Agg][] = [];
  let agg: Agg | undefined;
  let bucket = -1;
  const first = ROLLUP_LEVELS[0];
  for (let j = 0; j < steps.length; j++) {
    const b = Math.floor(steps[j] / first);
    if (b !== bucket) {
      if (agg) below.push([bucket, agg]);
      agg = undefined;
      bucket = b;
    }
    agg = addToAgg(agg, steps[j], values[j], wallTimes[j]);
  }
  if (agg) below.push([bucket, agg]);
  for (const [b, a] of below) out(first, b, a);
  for (let l = 1; l < ROLLUP_LEVELS.length; l++) {
    const ratio = ROLLUP_LEVELS[l] / ROLLUP_LEVELS[l - 1];
    const level: [number, Agg][] = [];
    for (const [b, a] of below) {
      const up = Math.floor(b / ratio);
      const last = level[level.length - 1];
      if (last && last[0] === up) appendAgg(last[1], a);
      else level.push([up, { ...a }]);
    }
    for (const [b, a] of level) out(ROLLUP_LEVELS[l], b, a);
    below = level;
  }
  let all: Agg | undefined;
  for (const [, a] of below) all = all ? appendAgg(all, a) : { ...a };
  return all;
}

// Merge a batch aggregate into a stored one (alias o). Both stores evaluate every SET expression on
// the old row; CASE instead of 2-argument MIN/MAX, which PostgreSQL spells LEAST/GREATEST.
export const least = (a: string, b: string) => `CASE WHEN ${b} < ${a} THEN ${b} ELSE ${a} END`;
export const greatest = (a: string, b: string) => `CASE WHEN ${b} > ${a} THEN ${b} ELSE ${a} END`;
const MERGE_SET = `
  "count" = o."count" + excluded."count",
  "minStep" = CASE WHEN excluded."minValue" < o."minValue" THEN excluded."minStep" ELSE o."minStep" END,
  "minWallTime" = CASE WHEN excluded."minValue" < o."minValue" THEN excluded."minWallTime" ELSE o."minWallTime" END,
  "minValue" = ${least(`o."minValue"`, `excluded."minValue"`)},
  "maxStep" = CASE WHEN excluded."maxValue" > o."maxValue" THEN excluded."maxStep" ELSE o."maxStep" END,
  "maxWallTime" = CASE WHEN excluded."maxValue" > o."maxValue" THEN excluded."maxWallTime" ELSE o."maxWallTime" END,
  "maxValue" = ${greatest(`o."maxValue"`, `excluded."maxValue"`)},
  "firstStep" = ${least(`o."firstStep"`, `excluded."firstStep"`)},
  "lastValue" = CASE WHEN excluded."lastStep" >= o."lastStep" THEN excluded."lastValue" ELSE o."lastValue" END,
  "lastStep" = ${greatest(`o."lastStep"`, `excluded."lastStep"`)}`;

/** MetricRollup's columns in the order its rows are written, with their PostgreSQL types; the first three are its key. */
const ROLLUP: [column: string, type: string][] = [
  ["seriesId", "integer"],
  ["level", "integer"],
  ["bucket", "integer"],
  ["count", "integer"],
  ["minStep", "integer"],
  ["minValue", "float8"],
  ["maxStep", "integer"],
  ["maxValue", "float8"],
  ["firstStep", "integer"],
  ["lastStep", "integer"],
  ["lastValue", "float8"],
  ["minWallTime", "float8"],
  ["maxWallTime", "float8"],
];
const ROLLUP_COLUMNS = ROLLUP.map(([c]) => `"${c}"`).join(",");

/** Bucket aggregates of one write, merged into MetricRollup in one upsert (each (series, level, bucket) once). */
export class RollupRows {
  private rows: number[] = [];
  add(seriesId: number, level: number, bucket: number, a: Agg): void {
    this.rows.push(
      seriesId,
      level,
      bucket,
      a.count,
      a.minStep,
      a.minValue,
      a.maxStep,
      a.maxValue,
      a.firstStep,
      a.lastStep,
      a.lastValue,
      a.minWallTime,
      a.maxWallTime,
    );
  }
  merge(db: RawDb): void {
    dialect(db).insertTyped(
      db,
      `INSERT INTO "MetricRollup" AS o (${ROLLUP_COLUMNS})`,
      ROLLUP.map(([, t]) => t),
      this.rows,
      `ON CONFLICT("seriesId","level","bucket") DO UPDATE SET ${MERGE_SET}`,
    );
  }
}

/** Replaced values can move a bucket's min/max anywhere: recompute those buckets and the summary from rows. */
export function recomputeBuckets(db: RawDb, seriesId: number, steps: Set<number>): void {
  const rows = db.prepare(`SELECT "step", "value", "wallTime" FROM "Metric" WHERE "seriesId" = ? AND "step" >= ? AND "step" < ? ORDER BY "step"`);
  const put = db.prepare(
    `INSERT INTO "MetricRollup" (${ROLLUP_COLUMNS}) VALUES (${ROLLUP.map(() => "?").join(",")})
     ON CONFLICT("seriesId","level","bucket") DO UPDATE SET ${ROLLUP.slice(3)
       .map(([c]) => `"${c}" = excluded."${c}"`)
       .join(", ")}`,
  );
  for (const level of ROLLUP_LEVELS) {
    const buckets = new Set([...steps].map((s) => Math.floor(s / level)));
    for (const b of buckets) {
      let a: Agg | undefined;
      for (const r of rows.iterate(seriesId, b * level, (b + 1) * level) as Iterable<{ step: number; value: number; wallTime: number }>)
        a = addToAgg(a, r.step, r.value, r.wallTime);
      if (a)
        put.run(seriesId, level, b, a.count, a.minStep, a.minValue, a.maxStep, a.maxValue, a.firstStep, a.lastStep, a.lastValue, a.minWallTime, a.maxWallTime);
    }
  }
  const top = ROLLUP_LEVELS[ROLLUP_LEVELS.length - 1];
  db.prepare(
    `UPDATE "MetricSeries" SET
       "minValue" = (SELECT MIN("minValue") FROM "MetricRollup" WHERE "seriesId" = @id AND "level" = @level),
       "maxValue" = (SELECT MAX("maxValue") FROM "MetricRollup" WHERE "seriesId" = @id AND "level" = @level),
       "lastValue" = (SELECT "value" FROM "Metric" WHERE "seriesId" = @id AND "step" = "MetricSeries"."lastStep")
     WHERE "id" = @id`,
  ).run({ id: seriesId, level: top });
}

/** A run's series ids, as a subquery (one bound parameter: the run id). */
export const RUN_SERIES = `SELECT "id" FROM "MetricSeries" WHERE "runId" = ?`;

/** Rebuilds a run's rollups and series summaries from its Metric rows; a series left without points is deleted. */
export function rebuildRollups(db: RawDb, runId: string): void {
  db.prepare(`DELETE FROM "MetricRollup" WHERE "seriesId" IN (${RUN_SERIES})`).run(runId);
  // Levels are integer constants written into the SQL: a bound JS number would be a REAL, and
  // "step" / 16.0 is not integer division.
  for (const level of ROLLUP_LEVELS)
    db.prepare(
      `INSERT INTO "MetricRollup" (${ROLLUP_COLUMNS})
       SELECT "seriesId",${level}, "step" / ${level}, COUNT(*), 0, MIN("value"), 0, MAX("value"), MIN("step"), MAX("step"), 0, 0, 0
       FROM "Metric" WHERE "seriesId" IN (${RUN_SERIES}) GROUP BY "seriesId", "step" / ${level}`,
    ).run(runId);
  // Steps of the min/max and the last value, from the rows (the aggregate above cannot name them).
  db.prepare(
    `UPDATE "MetricRollup" AS r SET
       "minStep" = (SELECT m."step" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" BETWEEN r."firstStep" AND r."lastStep" AND m."value" = r."minValue" ORDER BY m."step" LIMIT 1),
       "maxStep" = (SELECT m."step" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" BETWEEN r."firstStep" AND r."lastStep" AND m."value" = r."maxValue" ORDER BY m."step" LIMIT 1),
       "lastValue" = (SELECT m."value" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" = r."lastStep")
     WHERE r."seriesId" IN (${RUN_SERIES})`,
  ).run(runId);
  // Their wall times by primary key, once those steps are known (not a second scan of each bucket).
  db.prepare(
    `UPDATE "MetricRollup" AS r SET
       "minWallTime" = (SELECT m."wallTime" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" = r."minStep"),
       "maxWallTime" = (SELECT m."wallTime" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" = r."maxStep")
     WHERE r."seriesId" IN (${RUN_SERIES})`,
  ).run(runId);
  const top = ROLLUP_LEVELS[ROLLUP_LEVELS.length - 1];
  db.prepare(`DELETE FROM "MetricSeries" AS s WHERE s."runId" = ? AND NOT EXISTS (SELECT 1 FROM "MetricRollup" r WHERE r."seriesId" = s."id")`).run(runId);
  const agg = (f: string) => `(SELECT ${f} FROM "MetricRollup" r WHERE r."seriesId" = s."id" AND r."level" = ${top})`;
  db.prepare(
    `UPDATE "MetricSeries" AS s SET "count" = ${agg(`SUM(r."count")`)}, "firstStep" = ${agg(`MIN(r."firstStep")`)}, "lastStep" = ${agg(`MAX(r."lastStep")`)},
       "minValue" = ${agg(`MIN(r."minValue")`)}, "maxValue" = ${agg(`MAX(r."maxValue")`)} WHERE s."runId" = ?`,
  ).run(runId);
  db.prepare(
    `UPDATE "MetricSeries" AS s SET "lastValue" = (SELECT m."value" FROM "Metric" m WHERE m."seriesId" = s."id" AND m."step" = s."lastStep") WHERE s."runId" = ?`,
  ).run(runId);
}
