// Job log rows (lib/jobs/logs.ts is the log: it formats and buffers, this file stores). A job's
// lines are numbered 1, 2, 3, ...; negative seqs are the selftest runner's markers (job-marks.ts).
import { getRawDb, insertRows, writeTransaction, type RawDb } from "./raw";

export interface JobLogRow {
  seq: number;
  time: number;
  level: string;
  line: string;
}

/**
 * Appends lines after the job's last one and returns the last seq written, or null when the job
 * does not exist. One write transaction: the next seq is read and the lines inserted under the
 * job's write lock (the store's one on SQLite, the job's row on PostgreSQL), so concurrent appenders
 * (any process) never collide or interleave a batch.
 */
export function insertJobLogLines(jobId: string, lines: readonly Omit<JobLogRow, "seq">[], db: RawDb = getRawDb()): number | null {
  return writeTransaction(
    null,
    (db) => {
      if (db.prepare(`SELECT 1 FROM "Job" WHERE "id" = ?`).get(jobId) === undefined) return null;
      const base = Number(db.prepare(`SELECT COALESCE(MAX("seq"), 0) FROM "JobLog" WHERE "jobId" = ? AND "seq" > 0`).pluck().get(jobId));
      const values: unknown[] = [];
      for (const [i, l] of lines.entries()) values.push(jobId, base + 1 + i, l.time, l.level, l.line);
      // 5 parameters a row: 150 rows a statement stays under SQLite's bound-parameter limit
      insertRows(db, `INSERT INTO "JobLog" ("jobId","seq","time","level","line")`, 5, values, "", 150);
      return base + lines.length;
    },
    db,
    { jobId },
  );
}

/** Up to `limit` lines after `afterSeq` (exclusive), oldest first; never the negative-seq markers. */
export function jobLogLinesAfter(jobId: string, afterSeq: number, limit: number, db: RawDb = getRawDb()): JobLogRow[] {
  return db
    .prepare(`SELECT "seq", "time", "level", "line" FROM "JobLog" WHERE "jobId" = ? AND "seq" > ? ORDER BY "seq" ASC LIMIT ?`)
    .all(jobId, Math.max(0, afterSeq), limit) as JobLogRow[];
}
