// Reads of the store that tests make to check what was stored, which the product itself has no
// call for (row counts, a job's stored result, the packed columns as stored), plus
// the one arrangement a test needs that no product path makes: a run's step summaries forgotten,
// as in a store written before they existed. Not for app code: it reads tables whole.
import { getRawDb, type RawDb } from "../../lib/db/raw";

/** Tables with a "runId" column, so countable per run. */
const RUN_TABLES = new Set([
  "RolloutStep",
  "RolloutGroup",
  "Trajectory",
  "TrajectorySearch",
  "StepCreditSummary",
  "MetricSeries",
  "MetricNonFinite",
  "Checkpoint",
  "IngestBatch",
  "IngestStepPart",
  "Job",
]);
/** Tables keyed by a metric series: counted per run through it. */
const SERIES_TABLES = new Set(["Metric", "MetricRollup"]);

const ident = (name: string) => {
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(name)) throw new Error(`table: not a table name: ${JSON.stringify(name)}`);
  return `"${name}"`;
};

/**
 * Rows of `table`, of one run when `runId` is given. "Turn" counts the turns stored (packed in
 * their trajectories' rows, "length" each).
 */
export function countRows(table: string, runId?: string, db: RawDb = getRawDb()): number {
  if (table === "Turn") {
    const sql = `SELECT COALESCE(SUM("length"), 0) FROM "Trajectory"`;
    return Number(runId === undefined ? db.prepare(sql).pluck().get() : db.prepare(`${sql} WHERE "runId" = ?`).pluck().get(runId));
  }
  const t = ident(table);
  if (runId === undefined) return Number(db.prepare(`SELECT COUNT(*) FROM ${t}`).pluck().get());
  if (SERIES_TABLES.has(table))
    return Number(db.prepare(`SELECT COUNT(*) FROM ${t} m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ?`).pluck().get(runId));
  if (!RUN_TABLES.has(table)) throw new Error(`table: ${table} has no rows per run`);
  return Number(db.prepare(`SELECT COUNT(*) FROM ${t} WHERE "runId" = ?`).pluck().get(runId));
}

/**
 * A table's rows (of one run when `runId` is given) as value arrays, `cols` in that order, sorted by
 * the `orderBy` columns: stored rows to compare column for column.
 */
export function tableRows(table: string, cols: readonly string[], orderBy: readonly string[], runId?: string, db: RawDb = getRawDb()): unknown[][] {
  const list = (xs: readonly string[]) => xs.map(ident).join(",");
  if (runId !== undefined && !RUN_TABLES.has(table)) throw new Error(`table: ${table} has no rows per run`);
  const where = runId === undefined ? "" : `WHERE "runId" = ?`;
  const st = db.prepare(`SELECT ${list(cols)} FROM ${ident(table)} ${where} ORDER BY ${list(orderBy)}`).raw();
  return (runId === undefined ? st.all() : st.all(runId)) as unknown[][];
}

const METRIC_ORDER = { Metric: `m."step"`, MetricRollup: `m."level", m."bucket"` };

/**
 * A run's Metric or MetricRollup rows with the series' key in place of its integer id (which
 * differs between runs), in key order.
 */
export function metricRows(runId: string, table: "Metric" | "MetricRollup" = "Metric", db: RawDb = getRawDb()): Record<string, unknown>[] {
  const rows = db
    .prepare(
      `SELECT s."key", m.* FROM "${table}" m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ? ORDER BY s."key", ${METRIC_ORDER[table]}`,
    )
    .all(runId) as Record<string, unknown>[];
  return rows.map(({ seriesId: _, ...r }) => r);
}

/** One key's stored steps, in order. */
export function metricSteps(runId: string, key: string, db: RawDb = getRawDb()): number[] {
  return db
    .prepare(`SELECT m."step" FROM "Metric" m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ? AND s."key" = ? ORDER BY m."step"`)
    .pluck()
    .all(runId, key) as number[];
}

/** The jobs of a run as stored (status, and the result as JSON text), oldest first. */
export function runJobRows(runId: string, db: RawDb = getRawDb()): { id: string; kind: string; status: string; result: string | null }[] {
  return db.prepare(`SELECT "id", "kind", "status", "result" FROM "Job" WHERE "runId" = ? ORDER BY "createdAt", "id"`).all(runId) as {
    id: string;
    kind: string;
    status: string;
    result: string | null;
  }[];
}

/** A job's JobLog rows with negative seq (the self-test job's step markers), highest seq first. */
export function jobMarkRows(jobId: string, db: RawDb = getRawDb()): { seq: number; time: number; line: string }[] {
  return db.prepare(`SELECT "seq", "time", "line" FROM "JobLog" WHERE "jobId" = ? AND "seq" < 0 ORDER BY "seq" DESC`).all(jobId) as {
    seq: number;
    time: number;
    line: string;
  }[];
}

export interface StoredTrajectory {
  id: string;
  groupId: string;
  uid: string;
  taskSeed: number | null;
  step: number;
  index: number;
  success: boolean;
  length: number;
}

/** Every trajectory of a run with its group and step, in (step, uid, index) order: a reference to check pages and filters against. */
export function runTrajectoryRows(runId: string, db: RawDb = getRawDb()): StoredTrajectory[] {
  const rows = db
    .prepare(
      `SELECT t."id", t."groupId", g."uid", g."taskSeed", s."step", t."index", t."success", t."length"
       FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId"
       WHERE t."runId" = ? ORDER BY s."step", g."uid", t."index"`,
    )
    .all(runId) as (Omit<StoredTrajectory, "success"> & { success: number })[];
  return rows.map((r) => ({ ...r, success: Boolean(r.success) }));
}

/** A run's trajectories' packed text and token columns as stored, in first-turn order. */
export function packedTurnColumns(runId: string, db: RawDb = getRawDb()): { turnTexts: Buffer; turnTokens: Buffer | null }[] {
  return db.prepare(`SELECT "turnTexts", "turnTokens" FROM "Trajectory" WHERE "runId" = ? ORDER BY "firstSeq"`).all(runId) as {
    turnTexts: Buffer;
    turnTokens: Buffer | null;
  }[];
}

/**
 * SQLite's plan for the trajectory list's page query (lib/db/rollouts.ts listTrajectories, no
 * filter but the run): its steps, one a line. Checks that the page is read in index order.
 */
export function trajectoryPagePlan(runId: string, db: RawDb = getRawDb()): string[] {
  const rows = db
    .prepare(
      `EXPLAIN QUERY PLAN SELECT t."id" FROM "RolloutStep" s CROSS JOIN "RolloutGroup" g ON g."stepId" = s."id" CROSS JOIN "Trajectory" t ON t."groupId" = g."id"
       WHERE s."runId" = ? ORDER BY s."step" DESC, g."uid", t."index" LIMIT 50`,
    )
    .all(runId) as { detail: string }[];
  return rows.map((r) => r.detail);
}

/** Deletes a run's per-step credit summaries: the store as written before they existed (they are made again on read). */
export function forgetStepSummaries(runId: string, db: RawDb = getRawDb()): void {
  db.prepare(`DELETE FROM "StepCreditSummary" WHERE "runId" = ?`).run(runId);
}

/** Every job (and, by cascade, its log), between tests. */
export function deleteAllJobs(db: RawDb = getRawDb()): void {
  db.prepare(`DELETE FROM "Job"`).run();
}

/** A run's trajectory rows with their packed texts as stored (a group's shared stream or a reference to it), in write order. */
export function trajectoryTextRows(runId: string, db: RawDb = getRawDb()): { id: string; groupId: string; index: number; turnTexts: Uint8Array }[] {
  return db.prepare(`SELECT "id", "groupId", "index", "turnTexts" FROM "Trajectory" WHERE "runId" = ? ORDER BY "firstSeq"`).all(runId) as {
    id: string;
    groupId: string;
    index: number;
    turnTexts: Uint8Array;
  }[];
}

/** The step a group belongs to. */
export function stepIdOfGroup(groupId: string, db: RawDb = getRawDb()): string {
  return db.prepare(`SELECT "stepId" FROM "RolloutGroup" WHERE "id" = ?`).pluck().get(groupId) as string;
}

/** Overwrites a trajectory's packed texts and length: a row as an older writer left it. */
export function overwriteTurnTexts(trajectoryId: string, turnTexts: Uint8Array, length: number, db: RawDb = getRawDb()): void {
  db.prepare(`UPDATE "Trajectory" SET "turnTexts" = ?, "length" = ? WHERE "id" = ?`).run(turnTexts, length, trajectoryId);
}

/** Clears a run's prompt hashes in the search index: rows indexed before the column existed. */
export function forgetPromptHashes(runId: string, db: RawDb = getRawDb()): void {
  db.prepare(`UPDATE "TrajectorySearch" SET "promptHash" = NULL WHERE "runId" = ?`).run(runId);
}

/** How many of these runs' search-index rows have no prompt hash. */
export function missingPromptHashes(runIds: readonly string[], db: RawDb = getRawDb()): number {
  return Number(
    db
      .prepare(`SELECT COUNT(*) FROM "TrajectorySearch" WHERE "runId" IN (${runIds.map(() => "?").join(", ")}) AND "promptHash" IS NULL`)
      .pluck()
      .get(...runIds),
  );
}

/** Sets the hash a write's IngestBatch record holds (`batchId` as ingest keys it, e.g. "step:3"): a record as an older server wrote it. */
export function setBatchHash(runId: string, batchId: string, hash: string, db: RawDb = getRawDb()): void {
  const r = db.prepare(`UPDATE "IngestBatch" SET "hash" = ? WHERE "runId" = ? AND "batchId" = ?`).run(hash, runId, batchId);
  if (r.changes !== 1) throw new Error(`no IngestBatch ${batchId} of run ${runId}`);
}
