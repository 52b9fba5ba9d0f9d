// The job queue's statements (lib/jobs/queue.ts is the queue: it decides, this file stores). Every
// transition is one conditional UPDATE whose WHERE is the state the queue decided from, so several
// workers coordinate through the database alone; the queue mirrors a transition onto its Run with a
// statement that applies only while the job is still in the state just written.
// Rows come back as Prisma's generated Job type (the schema stays Prisma's), decoded here.
import { randomUUID } from "node:crypto";
import type { Job, Run } from "../generated/prisma/client";
import { dialect } from "./dialect";
import { dbDateTime, getRawDb, type RawDb } from "./raw";

export type { Job };

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

const JOB_COLS = `"id","runId","kind","payload","status","priority","attempts","maxAttempts","timeoutMs","availableAt","leaseOwner","leaseToken",
  "leaseExpiresAt","heartbeatAt","cancelRequested","progress","progressMessage","error","result","createdAt","updatedAt","startedAt","finishedAt"`;

type JobRow = Omit<Job, "payload" | "result" | "cancelRequested" | DateCol> & {
  payload: string;
  result: string | null;
  cancelRequested: number | boolean;
} & Record<DateCol, string | null>;
type DateCol = "availableAt" | "leaseExpiresAt" | "heartbeatAt" | "createdAt" | "updatedAt" | "startedAt" | "finishedAt";

const date = (v: string | null) => (v === null ? null : new Date(v));

/** A stored row as Prisma's Job: dates, booleans and JSON decoded (both stores give text, 1/0). */
function toJob(r: JobRow): Job {
  return {
    ...r,
    payload: JSON.parse(r.payload),
    result: r.result === null ? null : JSON.parse(r.result),
    cancelRequested: Boolean(r.cancelRequested),
    availableAt: new Date(r.availableAt!),
    createdAt: new Date(r.createdAt!),
    updatedAt: new Date(r.updatedAt!),
    leaseExpiresAt: date(r.leaseExpiresAt),
    heartbeatAt: date(r.heartbeatAt),
    startedAt: date(r.startedAt),
    finishedAt: date(r.finishedAt),
  };
}

export function findJob(jobId: string, db: RawDb = getRawDb()): Job | null {
  const r = db.prepare(`SELECT ${JOB_COLS} FROM "Job" WHERE "id" = ?`).get(jobId) as JobRow | undefined;
  return r ? toJob(r) : null;
}

/** The job's run id (null: none), or undefined when there is no such job. */
export function jobRunId(jobId: string, db: RawDb = getRawDb()): string | null | undefined {
  const r = db.prepare(`SELECT "runId" FROM "Job" WHERE "id" = ?`).get(jobId) as { runId: string | null } | undefined;
  return r ? r.runId : undefined;
}

export function cancelRequested(jobId: string, db: RawDb = getRawDb()): boolean {
  return Boolean(db.prepare(`SELECT "cancelRequested" FROM "Job" WHERE "id" = ?`).pluck().get(jobId));
}

export interface ClaimFilter {
  workerId: string;
  /** only these kinds (none or empty: any) */
  kinds?: readonly string[] | null;
  excludeKinds?: readonly string[];
  jobId?: string | null;
  now: Date;
  leaseMs: number;
}

/**
 * Marks the best ready job (priority desc, then oldest) running under a new lease in one statement
 * and returns it, or null when none is ready. Exactly one claimer gets a job: SQLite runs the
 * statement under its one write lock; on PostgreSQL the candidate row is locked FOR UPDATE and rows
 * other claimers hold are skipped (SKIP LOCKED), so racing workers take different jobs.
 */
export function claimNextJob(c: ClaimFilter, db: RawDb = getRawDb()): Job | null {
  const at = dbDateTime(c.now);
  const where: string[] = [`"status" = 'queued'`, `"availableAt" <= ?`];
  const args: unknown[] = [at];
  if (c.kinds?.length) where.push(`"kind" IN (${c.kinds.map(() => "?").join(",")})`), args.push(...c.kinds);
  if (c.excludeKinds?.length) where.push(`"kind" NOT IN (${c.excludeKinds.map(() => "?").join(",")})`), args.push(...c.excludeKinds);
  if (c.jobId) where.push(`"id" = ?`), args.push(c.jobId);
  const lock = dialect(db).skipLocked ? "FOR UPDATE SKIP LOCKED" : "";
  const row = db
    .prepare(
      `UPDATE "Job" SET "status" = 'running', "leaseOwner" = ?, "leaseToken" = ?, "leaseExpiresAt" = ?, "heartbeatAt" = ?,
         "attempts" = "attempts" + 1, "startedAt" = ?, "finishedAt" = NULL, "updatedAt" = ?
       WHERE "status" = 'queued' AND "id" = (SELECT "id" FROM "Job" WHERE ${where.join(" AND ")}
                     ORDER BY "priority" DESC, "createdAt" ASC, "id" ASC LIMIT 1 ${lock})
       RETURNING ${JOB_COLS}`,
    )
    .get(c.workerId, randomUUID(), dbDateTime(new Date(c.now.getTime() + c.leaseMs)), at, at, dbDateTime(), ...args) as JobRow | undefined;
  return row ? toJob(row) : null;
}

/** The state a transition is conditioned on: it applies only while the job is still in it. */
export interface JobState {
  id: string;
  status: string;
  leaseToken: string | null;
  cancelRequested?: boolean;
  /** and its lease expired before this time */
  leaseExpiredBefore?: Date;
}

type Settable<T> = { [K in keyof T]?: T[K] extends Date | null ? Date | null : T[K] extends Date ? Date : T[K] };

/** Job columns a transition may set; `result` is JSON text (null: SQL NULL), `attemptsDelta` adds to attempts. */
export type JobChange = Settable<
  Pick<
    Job,
    | "status"
    | "availableAt"
    | "leaseExpiresAt"
    | "heartbeatAt"
    | "cancelRequested"
    | "progress"
    | "progressMessage"
    | "error"
    | "attempts"
    | "startedAt"
    | "finishedAt"
  >
> & { result?: string | null; attemptsDelta?: number };

/** Run columns a job transition mirrors. */
export type RunChange = Settable<Pick<Run, "status" | "progress" | "progressMessage" | "error" | "startedAt" | "finishedAt">>;

/** SET list and its values; "updatedAt" is always now (Prisma's @updatedAt, kept for its readers). */
function setList(change: Record<string, unknown>): { sql: string; args: unknown[] } {
  const cols: string[] = [];
  const args: unknown[] = [];
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined || k === "attemptsDelta") continue;
    cols.push(`"${k}" = ?`);
    args.push(v instanceof Date ? dbDateTime(v) : typeof v === "boolean" ? Number(v) : v);
  }
  const delta = (change as JobChange).attemptsDelta;
  if (delta) cols.push(`"attempts" = "attempts" + ?`), args.push(delta);
  cols.push(`"updatedAt" = ?`);
  args.push(dbDateTime());
  return { sql: cols.join(", "), args };
}

/** `"leaseToken"` equal to a token, or NULL (one spelling for both stores). */
const tokenIs = (token: string | null, col = `"leaseToken"`) => (token === null ? { sql: `${col} IS NULL`, args: [] } : { sql: `${col} = ?`, args: [token] });

function stateWhere(s: JobState, prefix = ""): { sql: string; args: unknown[] } {
  const tok = tokenIs(s.leaseToken, `${prefix}"leaseToken"`);
  let sql = `${prefix}"id" = ? AND ${prefix}"status" = ? AND ${tok.sql}`;
  const args: unknown[] = [s.id, s.status, ...tok.args];
  if (s.cancelRequested !== undefined) (sql += ` AND ${prefix}"cancelRequested" = ?`), args.push(Number(s.cancelRequested));
  if (s.leaseExpiredBefore) (sql += ` AND ${prefix}"leaseExpiresAt" < ?`), args.push(dbDateTime(s.leaseExpiredBefore));
  return { sql, args };
}

/** Applies `change` to the job while it is in `state`; whether it did (compare-and-swap). */
export function updateJobIf(state: JobState, change: JobChange, db: RawDb = getRawDb()): boolean {
  const set = setList(change);
  const where = stateWhere(state);
  return db.prepare(`UPDATE "Job" SET ${set.sql} WHERE ${where.sql}`).run(...set.args, ...where.args).changes === 1;
}

/** Applies `change` to the run while its job is in `jobState` (so a late mirror never undoes a newer transition). */
export function mirrorToRun(runId: string, jobState: JobState, change: RunChange, db: RawDb = getRawDb()): void {
  const set = setList(change);
  const where = stateWhere(jobState, `j.`);
  db.prepare(`UPDATE "Run" SET ${set.sql} WHERE "id" = ? AND EXISTS (SELECT 1 FROM "Job" j WHERE j."runId" = ? AND ${where.sql})`).run(
    ...set.args,
    runId,
    runId,
    ...where.args,
  );
}

export interface ExpiredJob {
  id: string;
  runId: string | null;
  leaseToken: string | null;
  leaseOwner: string | null;
  attempts: number;
  maxAttempts: number;
  cancelRequested: boolean;
}

/** Running jobs whose lease expired before `now`, longest expired first. */
export function expiredJobs(now: Date, limit: number, db: RawDb = getRawDb()): ExpiredJob[] {
  const rows = db
    .prepare(
      `SELECT "id", "runId", "leaseToken", "leaseOwner", "attempts", "maxAttempts", "cancelRequested" FROM "Job"
       WHERE "status" = 'running' AND "leaseExpiresAt" < ? ORDER BY "leaseExpiresAt" ASC LIMIT ?`,
    )
    .all(dbDateTime(now), limit) as (Omit<ExpiredJob, "cancelRequested"> & { cancelRequested: number })[];
  return rows.map((r) => ({ ...r, cancelRequested: Boolean(r.cancelRequested) }));
}

export interface JobFilter {
  /** one of these jobs */
  idIn?: readonly string[];
  kind?: string;
  runId?: string;
  /** exactly this status */
  status?: string;
  /** any of these statuses */
  statusIn?: readonly string[];
  /** any status but this one */
  statusNot?: string;
}

function filterWhere(f: JobFilter): { sql: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.idIn) where.push(`"id" IN (${f.idIn.map(() => "?").join(",") || "NULL"})`), args.push(...f.idIn);
  if (f.kind) where.push(`"kind" = ?`), args.push(f.kind);
  if (f.runId) where.push(`"runId" = ?`), args.push(f.runId);
  if (f.status) where.push(`"status" = ?`), args.push(f.status);
  if (f.statusIn) where.push(`"status" IN (${f.statusIn.map(() => "?").join(",")})`), args.push(...f.statusIn);
  if (f.statusNot) where.push(`"status" <> ?`), args.push(f.statusNot);
  return { sql: where.length ? `WHERE ${where.join(" AND ")}` : "", args };
}

export function countJobs(f: JobFilter, db: RawDb = getRawDb()): number {
  const w = filterWhere(f);
  return Number(
    db
      .prepare(`SELECT COUNT(*) FROM "Job" ${w.sql}`)
      .pluck()
      .get(...w.args),
  );
}

/** The orders jobs are listed in: the queue's claim order, or most recent first. */
export const JOB_ORDERS = {
  // higher priority first, then the one that may run soonest (back-off), then the oldest
  claim: `"priority" DESC, "availableAt" ASC, "createdAt" ASC, "id" ASC`,
  recent: `"createdAt" DESC, "id" DESC`,
} as const;

export function pageJobs(f: JobFilter, order: keyof typeof JOB_ORDERS, skip: number, take: number, db: RawDb = getRawDb()): Job[] {
  const w = filterWhere(f);
  const rows = db.prepare(`SELECT ${JOB_COLS} FROM "Job" ${w.sql} ORDER BY ${JOB_ORDERS[order]} LIMIT ? OFFSET ?`).all(...w.args, take, skip) as JobRow[];
  return rows.map(toJob);
}
