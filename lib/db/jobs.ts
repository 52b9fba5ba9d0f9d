// The job queue's raw statements (lib/jobs/queue.ts is the queue: it decides, this file stores).
// Writes that must be atomic with others go through the raw connection in the caller's transaction;
// the rest of the queue uses Prisma.
import { randomUUID } from "node:crypto";
import { dialect } from "./dialect";
import { dbDateTime, getRawDb, type RawDb } from "./raw";

export interface QueuedJobRow {
  id: string;
  runId: string | null;
  kind: string;
  /** JSON text */
  payload: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number | null;
  availableAt: string;
  /** created and updated at */
  at: string;
}

export function insertQueuedJob(db: RawDb, j: QueuedJobRow): void {
  db.prepare(
    `INSERT INTO "Job" ("id","runId","kind","payload","status","priority","maxAttempts","timeoutMs","availableAt","createdAt","updatedAt")
     VALUES (?,?,?,?,'queued',?,?,?,?,?,?)`,
  ).run(j.id, j.runId, j.kind, j.payload, j.priority, j.maxAttempts, j.timeoutMs, j.availableAt, j.at, j.at);
}

export function runExists(runId: string, db: RawDb = getRawDb()): boolean {
  return db.prepare(`SELECT 1 FROM "Run" WHERE "id" = ?`).get(runId) !== undefined;
}

/** A run whose new job waits: queued, progress and times cleared. */
export function markRunQueued(runId: string, at: string, db: RawDb = getRawDb()): void {
  db.prepare(
    `UPDATE "Run" SET "status" = 'queued', "progress" = 0, "progressMessage" = 'queued', "error" = NULL, "startedAt" = NULL, "finishedAt" = NULL, "updatedAt" = ? WHERE "id" = ?`,
  ).run(at, runId);
}

/**
 * Where the store can (PostgreSQL: FOR UPDATE SKIP LOCKED), marks the best ready job running under
 * a new lease in one statement, so racing workers take different jobs instead of retrying one:
 * [] when none is ready. Undefined where it cannot (SQLite, one writer at a time): the queue then
 * claims by compare-and-swap.
 */
export function claimInOneStatement(c: {
  workerId: string;
  kinds: readonly string[] | null | undefined;
  excludeKinds: readonly string[] | undefined;
  jobId: string | null;
  now: Date;
  leaseMs: number;
}): { id: string; claimed: { leaseToken: string; leaseExpiresAt: Date } }[] | undefined {
  const db = getRawDb();
  if (!dialect(db).skipLocked) return undefined;
  const leaseToken = randomUUID();
  const leaseExpiresAt = new Date(c.now.getTime() + c.leaseMs);
  const at = dbDateTime(c.now);
  const where: string[] = [`"status" = 'queued'`, `"availableAt" <= ?`];
  const args: unknown[] = [at];
  if (c.kinds?.length) where.push(`"kind" IN (${c.kinds.map(() => "?").join(",")})`), args.push(...c.kinds);
  if (c.excludeKinds?.length) where.push(`"kind" NOT IN (${c.excludeKinds.map(() => "?").join(",")})`), args.push(...c.excludeKinds);
  if (c.jobId) where.push(`"id" = ?`), args.push(c.jobId);
  const row = db
    .prepare(
      `UPDATE "Job" SET "status" = 'running', "leaseOwner" = ?, "leaseToken" = ?, "leaseExpiresAt" = ?, "heartbeatAt" = ?,
         "attempts" = "attempts" + 1, "startedAt" = ?, "finishedAt" = NULL, "updatedAt" = ?
       WHERE "id" = (SELECT "id" FROM "Job" WHERE ${where.join(" AND ")}
                     ORDER BY "priority" DESC, "createdAt" ASC, "id" ASC LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING "id"`,
    )
    .get(c.workerId, leaseToken, dbDateTime(leaseExpiresAt), at, at, at, ...args) as { id: string } | undefined;
  return row ? [{ id: row.id, claimed: { leaseToken, leaseExpiresAt } }] : [];
}
