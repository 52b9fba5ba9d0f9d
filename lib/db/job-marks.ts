// Marker rows of the queue's self-test job: JobLog rows with negative seq (a job's ordinary log
// lines count up from 0), one a (job, step), written in the job's fenced transaction so that
// "each step ran exactly once" can be checked from the table.
import { getRawDb, type RawDb } from "./raw";

/** The marker seqs a job has written (all negative). */
export function markedSeqs(jobId: string, db: RawDb = getRawDb()): number[] {
  return db.prepare(`SELECT "seq" FROM "JobLog" WHERE "jobId" = ? AND "seq" < 0`).pluck().all(jobId) as number[];
}

/** Writes one marker row (inside the caller's fenced transaction). */
export function writeMark(jobId: string, seq: number, level: string, line: string, db: RawDb): void {
  db.prepare(`INSERT INTO "JobLog" ("jobId", "seq", "time", "level", "line") VALUES (?, ?, ?, ?, ?)`).run(jobId, seq, Date.now() / 1000, level, line);
}
