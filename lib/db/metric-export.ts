// A run's metric points at full resolution (no downsampling), key by key in chunks of columns:
// what the export route streams and the benchmarks read back.
import type { NonFiniteText } from "../schemas/metrics";
import { getRawDb, isPostgresDb, type RawDb } from "./raw";

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
