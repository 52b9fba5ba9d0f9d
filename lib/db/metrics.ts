// Metric storage: narrow rows written in bulk, read back downsampled.
//
// Downsampling (W&B/Trackio-style): at most `maxPoints` points as min/max buckets whose width
// (`stride`) is a power of two chosen from the series' step range. Buckets are aligned to
// multiples of the stride, so while a run grows the stride stays the same until the range doubles
// and old buckets never move: live charts don't jump. The first and last points are always kept.
//
// Speed: a GROUP BY over 10^6 rows costs ~250 ms in SQLite, so writes also maintain MetricRollup
// buckets at widths 16, 256, 4096 and 65536; a read aggregates the coarsest rollup not wider than
// the stride (at most 16 rollup rows per output bucket).
import type { LogMetrics, MetricKeyInfo, NonFiniteText, Series } from "../schemas/metrics";
import { assertRunExists, getRawDb, isPostgresDb, writeTransaction, type Fence, type RawDb } from "./raw";
import { dialect } from "./dialect";

export const ROLLUP_LEVELS = [16, 256, 4096, 65536] as const;

export interface MetricPoint {
  key: string;
  step: number;
  value: number;
  /** epoch seconds */
  wallTime: number;
}

interface Agg {
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

function addToAgg(agg: Agg | undefined, step: number, value: number, wallTime: number): Agg {
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

// Merge a batch aggregate into a stored one (alias o). Both stores evaluate every SET expression on
// the old row; CASE instead of 2-argument MIN/MAX, which PostgreSQL spells LEAST/GREATEST.
const least = (a: string, b: string) => `CASE WHEN ${b} < ${a} THEN ${b} ELSE ${a} END`;
const greatest = (a: string, b: string) => `CASE WHEN ${b} > ${a} THEN ${b} ELSE ${a} END`;
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
  return Object.keys(values).map((key) => {
    const col = values[key];
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
  return writeTransaction(
    fence,
    (db) => {
      const series = seriesOf(db, runId, keys);
      const out = series.length
        ? onlyNewPoints(db, series)
          ? appendPoints(db, runId, series)
          : writePointByPoint(db, runId, series)
        : { inserted: 0, replaced: 0 };
      const nf = writeNonFinite(db, runId, keys);
      return { inserted: out.inserted + nf.inserted, replaced: out.replaced + nf.replaced };
    },
    db,
    { runId },
  );
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
    for (const level of ROLLUP_LEVELS) {
      let agg: Agg | undefined;
      let bucket = -1;
      for (let j = 0; j < n; j++) {
        const b = Math.floor(steps[j] / level);
        if (b !== bucket) {
          if (agg) rollups.add(id, level, bucket, agg);
          agg = undefined;
          bucket = b;
        }
        agg = addToAgg(agg, steps[j], values[j], wallTimes[j]);
      }
      if (agg) rollups.add(id, level, bucket, agg);
    }
    let a: Agg | undefined;
    for (let j = 0; j < n; j++) a = addToAgg(a, steps[j], values[j], wallTimes[j]);
    aggs.set(k, a!);
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

/** Bucket aggregates of one write, merged into MetricRollup in one upsert (each (series, level, bucket) once). */
class RollupRows {
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

/** Replaced values can move a bucket's min/max anywhere: recompute those buckets and the summary from rows. */
function recomputeBuckets(db: RawDb, seriesId: number, steps: Set<number>): void {
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

/** One key's points of an export chunk, in step order, as columns. */
export interface MetricColumns {
  key: string;
  steps: number[];
  values: number[];
  wallTimes: number[];
}

/**
 * Full-resolution points for export (no sampling), key by key in step order, as chunks of columns.
 * Each chunk is its own query: no cursor stays open between chunks, so the connection keeps serving
 * other requests while a large export streams. On SQLite a chunk is three single-column reads in
 * one read transaction (the same rows for each): no array is made a row, 10^6 points read in
 * ~0.4 s instead of ~0.9 (node --import tsx, 2 loaded cores). PostgreSQL reads the rows in one
 * statement, one snapshot, and splits them.
 */
export function* metricColumnChunks(runId: string, keys: string[] | null, chunk = 20_000, db: RawDb = getRawDb()): Generator<MetricColumns> {
  const from = `FROM "Metric" WHERE "seriesId" = ? AND "step" > ? ORDER BY "step" LIMIT ?`;
  const page: (id: number, after: number) => [number[], number[], number[]] = isPostgresDb(db)
    ? (id, after) => {
        const rows = db.prepare(`SELECT "step","value","wallTime" ${from}`).raw().all(id, after, chunk) as [number, number, number][];
        return [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2])];
      }
    : db.transaction((id: number, after: number) => {
        const column = (c: string) => db.prepare(`SELECT "${c}" ${from}`).pluck().all(id, after, chunk) as number[];
        return [column("step"), column("value"), column("wallTime")] as [number[], number[], number[]];
      });
  const ids = db.prepare(`SELECT "key","id" FROM "MetricSeries" WHERE "runId" = ? ORDER BY "key"`).raw().all(runId) as [string, number][];
  // Non-finite values (few) are merged in step order as NaN / ±Infinity numbers; the export formats them.
  const bad = new Map<string, [number, number, number][]>();
  for (const [key, step, value, wallTime] of db
    .prepare(`SELECT "key","step","value","wallTime" FROM "MetricNonFinite" WHERE "runId" = ? ORDER BY "key","step"`)
    .raw()
    .all(runId) as [string, number, NonFiniteText, number][]) {
    if (!bad.has(key)) bad.set(key, []);
    bad.get(key)!.push([step, Number(value), wallTime]);
  }
  const idOf = new Map(ids);
  const allKeys = [...new Set([...ids.map(([k]) => k), ...bad.keys()])].sort();
  for (const key of keys ?? allKeys) {
    const id = idOf.get(key);
    const extra = bad.get(key) ?? [];
    let e = 0; // the next non-finite point not yet yielded
    if (id !== undefined)
      for (let after = -1; ; ) {
        const [steps, values, wallTimes] = page(id, after);
        const full = steps.length === chunk;
        // the non-finite points up to this chunk's last step (all that are left after the last chunk), merged in step order
        const upTo = full ? steps[steps.length - 1] : Infinity;
        const from = e;
        while (e < extra.length && extra[e][0] <= upTo) e++;
        const out = e > from ? mergeColumns(key, steps, values, wallTimes, extra.slice(from, e)) : { key, steps, values, wallTimes };
        if (out.steps.length) yield out;
        if (!full) break;
        after = steps[steps.length - 1];
      }
    if (e < extra.length) yield mergeColumns(key, [], [], [], extra.slice(e));
  }
}

/** A chunk's finite points and some non-finite ones ([step, value, wall time], in step order), merged in step order. */
function mergeColumns(key: string, steps: number[], values: number[], wallTimes: number[], extra: [number, number, number][]): MetricColumns {
  const out: MetricColumns = { key, steps: [], values: [], wallTimes: [] };
  for (let i = 0, j = 0; i < steps.length || j < extra.length; ) {
    const fromExtra = i === steps.length || (j < extra.length && extra[j][0] < steps[i]);
    const [step, value, wallTime] = fromExtra ? extra[j++] : [steps[i], values[i], wallTimes[i++]];
    out.steps.push(step);
    out.values.push(value);
    out.wallTimes.push(wallTime);
  }
  return out;
}

/** metricColumnChunks as rows: chunks of `[key, step, value, wallTime]`. */
export function* metricChunks(runId: string, keys: string[] | null, chunk = 20_000, db: RawDb = getRawDb()): Generator<[string, number, number, number][]> {
  for (const c of metricColumnChunks(runId, keys, chunk, db)) yield c.steps.map((step, i) => [c.key, step, c.values[i], c.wallTimes[i]]);
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

/** A run's series ids, as a subquery (one bound parameter: the run id). */
const RUN_SERIES = `SELECT "id" FROM "MetricSeries" WHERE "runId" = ?`;

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

/** Rebuilds a run's rollups and series summaries from its Metric rows; a series left without points is deleted. */
function rebuildRollups(db: RawDb, runId: string): void {
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
