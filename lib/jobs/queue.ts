// The job queue over the database (README.md beside this file has the state machine).
//
// Every transition is ONE conditional statement (compare-and-swap), so several workers on several
// machines coordinate through the database alone: a claim is `UPDATE ... WHERE id = ? AND status =
// 'queued'` and wins iff it changed one row; everything a worker does afterwards is conditioned on
// `status = 'running' AND leaseToken = <its token>` (the fencing token, new on every claim).
// Prisma's typed API is used everywhere except enqueue, which is one raw INSERT so that a Run and
// its job can be created in one synchronous transaction (see enqueueInTransaction).
//
// No interactive transactions on purpose: the better-sqlite3 adapter runs them on the process's one
// connection with the write lock held across awaits, so a runner's fenced write (a second, raw
// connection, synchronous busy-wait) in the same process would deadlock against it. Instead the
// linked Run is mirrored right after the job's transition by a statement that applies only while the
// job is still in the state just written (same status and lease token): a late mirror write can never
// overwrite a newer transition's.
import { randomUUID } from "node:crypto";
import type { z } from "zod";
import { getDb, type Db } from "../db/client";
import { LeaseLostError, dbDateTime, writeTransaction, type Fence, type RawDb } from "../db/raw";
import { claimInOneStatement, insertQueuedJob, markRunQueued, runExists } from "../db/jobs";
import { Prisma, type Job } from "../generated/prisma/client";
import { defaultLeaseMs, defaultRetryBackoffMs, retryDelayMs } from "./config";
import { InvalidJobTransitionError, JobNotFoundError, RunNotFoundError } from "./errors";
import { getJobKind } from "./kinds";
import { appendLog } from "./logs";
import { EnqueueInputSchema, FinishOutcomeSchema, type EnqueueInput, type FinishOutcome, type JobStatus } from "./schemas";

export type { Job };

export interface QueueOptions {
  /** Prisma client (default: the process-wide one from getDb()) */
  db?: Db;
  /** the current time (tests move it forward instead of sleeping) */
  now?: Date;
}

export interface LeaseOptions extends QueueOptions {
  /** lease length from now (default TURNLENS_JOB_LEASE_MS, 10 s) */
  leaseMs?: number;
}

/** A job this worker holds: pass `fence` to writeTransaction for every result write. */
export interface ClaimedJob {
  id: string;
  kind: string;
  payload: unknown;
  runId: string | null;
  priority: number;
  /** wall-clock limit of this attempt in ms; null: none */
  timeoutMs: number | null;
  /** this claim's number, 1-based */
  attempts: number;
  maxAttempts: number;
  leaseOwner: string;
  leaseToken: string;
  leaseExpiresAt: Date;
  fence: Fence;
}

const MAX_ERROR_CHARS = 8_000;
const MAX_MESSAGE_CHARS = 500;

const clip = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

function toJson(v: unknown): Prisma.InputJsonValue | typeof Prisma.JsonNull {
  return v === null ? Prisma.JsonNull : (v as Prisma.InputJsonValue);
}

// Job.runId never changes: cache it so progress() costs no extra lookup.
const runIds = new Map<string, string | null>();
async function runIdOf(db: Db, jobId: string): Promise<string | null> {
  const hit = runIds.get(jobId);
  if (hit !== undefined) return hit;
  const row = await db.job.findUnique({ where: { id: jobId }, select: { runId: true } });
  const runId = row?.runId ?? null;
  if (runIds.size > 10_000) runIds.clear();
  if (row) runIds.set(jobId, runId);
  return runId;
}

/**
 * Copies a job transition onto its Run, only while the job is still in the state just written
 * (`jobState`: its new status and lease token), so it can never undo a later transition.
 */
async function mirrorRun(
  db: Db,
  runId: string | null,
  jobId: string,
  jobState: { status: JobStatus; leaseToken: string | null },
  data: Prisma.RunUpdateManyMutationInput,
): Promise<void> {
  if (!runId) return;
  await db.run.updateMany({ where: { id: runId, jobs: { some: { id: jobId, ...jobState } } }, data });
}

/** The job row, or JobNotFoundError. */
export async function getJob(jobId: string, opts: QueueOptions = {}): Promise<Job> {
  const db = opts.db ?? getDb();
  const job = await db.job.findUnique({ where: { id: jobId } });
  if (!job) throw new JobNotFoundError(jobId);
  return job;
}

/** A validated enqueue input with the kind's defaults applied (lib/jobs/kinds.ts). */
function resolveInput(
  input: EnqueueInput,
): Omit<z.output<typeof EnqueueInputSchema>, "maxAttempts" | "timeoutMs"> & { maxAttempts: number; timeoutMs: number | null } {
  const p = EnqueueInputSchema.parse(input);
  const spec = getJobKind(p.kind);
  return { ...p, maxAttempts: p.maxAttempts ?? spec?.maxAttempts ?? 3, timeoutMs: p.timeoutMs !== undefined ? p.timeoutMs : (spec?.timeoutMs ?? null) };
}

/**
 * The one implementation of adding a job: inserts the queued row inside the caller's open write
 * transaction (`db` from writeTransaction), so a caller can create a Run and its job atomically
 * (lib/db/runs.ts createRun). Does not touch the Run. Returns the job id. Throws a ZodError on bad input.
 *
 * Raw and synchronous, like every other write that must be atomic with others here: a Prisma
 * interactive transaction would hold SQLite's write lock across awaits, and a raw synchronous write
 * elsewhere in the same process would then deadlock against it.
 */
export function enqueueInTransaction(db: RawDb, input: EnqueueInput, now: Date = new Date()): string {
  const p = resolveInput(input);
  const id = randomUUID();
  const at = dbDateTime(now);
  insertQueuedJob(db, {
    id,
    runId: p.runId ?? null,
    kind: p.kind,
    payload: JSON.stringify(p.payload),
    priority: p.priority,
    maxAttempts: p.maxAttempts,
    timeoutMs: p.timeoutMs,
    availableAt: dbDateTime(p.availableAt ?? now),
    at,
  });
  return id;
}

/**
 * Adds a queued job and marks its Run queued, in one transaction. Throws a ZodError on bad input,
 * RunNotFoundError on a missing run. maxAttempts and timeoutMs default to the kind's (lib/jobs/kinds.ts).
 */
export async function enqueue(input: EnqueueInput, opts: QueueOptions = {}): Promise<Job> {
  const now = opts.now ?? new Date();
  const id = writeTransaction(null, (raw) => {
    const runId = input.runId ?? null;
    if (runId && !runExists(runId, raw)) throw new RunNotFoundError(runId);
    const jobId = enqueueInTransaction(raw, input, now);
    if (runId) {
      markRunQueued(runId, dbDateTime(now), raw);
    }
    return jobId;
  });
  return getJob(id, opts);
}

/**
 * Claims the best available job (priority desc, then oldest) for `workerId`, or returns null.
 * The claim is a compare-and-swap on status = queued: of several workers racing for one job exactly
 * one changes the row; the others move on to the next candidate.
 */
export async function claim(
  workerId: string,
  kinds?: readonly string[] | null,
  opts: LeaseOptions & { candidates?: number; jobId?: string | null; excludeKinds?: readonly string[] } = {},
): Promise<ClaimedJob | null> {
  const db = opts.db ?? getDb();
  const leaseMs = opts.leaseMs ?? defaultLeaseMs();
  // excludeKinds: kinds this worker already runs as many of as their registry concurrency allows
  const kindIn = kinds && kinds.length > 0 ? { in: [...kinds] } : {};
  const kindNotIn = opts.excludeKinds?.length ? { notIn: [...opts.excludeKinds] } : {};
  const kindFilter: Prisma.JobWhereInput = Object.keys({ ...kindIn, ...kindNotIn }).length ? { kind: { ...kindIn, ...kindNotIn } } : {};
  // A few rounds: under contention every candidate of a round may be taken by other workers.
  for (let round = 0; round < 3; round++) {
    const now = opts.now ?? new Date();
    const ready: Prisma.JobWhereInput = { status: "queued", availableAt: { lte: now }, ...kindFilter, ...(opts.jobId ? { id: opts.jobId } : {}) };
    // On PostgreSQL one statement claims: the best ready row not locked by another claimer
    // (FOR UPDATE SKIP LOCKED), so racing workers take different jobs instead of retrying one.
    const oneStatement = opts.db
      ? undefined
      : claimInOneStatement({ workerId, kinds, excludeKinds: opts.excludeKinds, jobId: opts.jobId ?? null, now, leaseMs });
    const candidates =
      oneStatement ??
      (await db.job.findMany({
        where: ready,
        orderBy: [{ priority: "desc" }, { createdAt: "asc" }, { id: "asc" }],
        take: opts.candidates ?? 8,
        select: { id: true },
      }));
    if (candidates.length === 0) return null;
    for (const { id, claimed } of candidates as { id: string; claimed?: { leaseToken: string; leaseExpiresAt: Date } }[]) {
      const leaseToken = claimed?.leaseToken ?? randomUUID();
      const leaseExpiresAt = claimed?.leaseExpiresAt ?? new Date(now.getTime() + leaseMs);
      const { count } = claimed
        ? { count: 1 }
        : await db.job.updateMany({
            where: { id, ...ready },
            data: {
              status: "running",
              leaseOwner: workerId,
              leaseToken,
              leaseExpiresAt,
              heartbeatAt: now,
              attempts: { increment: 1 },
              startedAt: now,
              finishedAt: null,
            },
          });
      if (count !== 1) continue; // another worker won it
      const job = await db.job.findUnique({ where: { id } });
      if (!job || job.leaseToken !== leaseToken) continue; // deleted in the meantime
      runIds.set(id, job.runId);
      await mirrorRun(
        db,
        job.runId,
        id,
        { status: "running", leaseToken },
        {
          status: "running",
          startedAt: now,
          finishedAt: null,
          error: null,
          progressMessage: `running (attempt ${job.attempts}/${job.maxAttempts})`,
        },
      );
      return {
        id,
        kind: job.kind,
        payload: job.payload,
        runId: job.runId,
        priority: job.priority,
        timeoutMs: job.timeoutMs,
        attempts: job.attempts,
        maxAttempts: job.maxAttempts,
        leaseOwner: workerId,
        leaseToken,
        leaseExpiresAt,
        fence: { jobId: id, leaseToken },
      };
    }
  }
  return null;
}

/**
 * Extends the lease while the job is still running under `token`; returns whether a cancel was
 * requested. Throws LeaseLostError when the token no longer holds (finished, canceled, reaped or
 * claimed elsewhere): the caller must stop the job and write nothing more.
 * An expired lease that no reaper has acted on yet is still renewed: expiry takes effect only
 * through reapExpired's own compare-and-swap.
 */
export async function heartbeat(jobId: string, token: string, opts: LeaseOptions = {}): Promise<boolean> {
  const db = opts.db ?? getDb();
  const now = opts.now ?? new Date();
  const leaseMs = opts.leaseMs ?? defaultLeaseMs();
  const { count } = await db.job.updateMany({
    where: { id: jobId, leaseToken: token, status: "running" },
    data: { leaseExpiresAt: new Date(now.getTime() + leaseMs), heartbeatAt: now },
  });
  if (count !== 1) throw new LeaseLostError(jobId);
  const row = await db.job.findUnique({ where: { id: jobId }, select: { cancelRequested: true } });
  return row?.cancelRequested ?? false;
}

/** Records progress (fraction in [0, 1]) on the job and its Run; false if the lease no longer holds. */
export async function progress(jobId: string, token: string, fraction: number, message?: string, opts: QueueOptions = {}): Promise<boolean> {
  if (!Number.isFinite(fraction) || fraction < 0 || fraction > 1) {
    throw new RangeError(`progress fraction must be within [0, 1], got ${fraction}`);
  }
  const db = opts.db ?? getDb();
  const data = { progress: fraction, ...(message !== undefined ? { progressMessage: clip(message, MAX_MESSAGE_CHARS) } : {}) };
  const { count } = await db.job.updateMany({ where: { id: jobId, leaseToken: token, status: "running" }, data });
  if (count !== 1) return false;
  await mirrorRun(db, await runIdOf(db, jobId), jobId, { status: "running", leaseToken: token }, data);
  return true;
}

/**
 * Ends a running job: succeeded, failed or canceled. Applies only while the job is still running
 * under `token`; returns false (and changes nothing) otherwise.
 */
export async function finish(jobId: string, token: string, outcome: FinishOutcome, opts: QueueOptions = {}): Promise<boolean> {
  const db = opts.db ?? getDb();
  const now = opts.now ?? new Date();
  const o = FinishOutcomeSchema.parse(outcome);
  const error = o.status === "succeeded" ? null : o.error !== undefined ? clip(o.error, MAX_ERROR_CHARS) : o.status === "failed" ? "failed" : null;
  const done = o.status === "succeeded" ? { progress: 1 } : {};
  const { count } = await db.job.updateMany({
    where: { id: jobId, leaseToken: token, status: "running" },
    data: {
      status: o.status,
      finishedAt: now,
      leaseExpiresAt: null,
      error,
      ...done,
      ...(o.result !== undefined ? { result: toJson(o.result) } : {}),
    },
  });
  if (count !== 1) return false;
  await mirrorRun(
    db,
    await runIdOf(db, jobId),
    jobId,
    { status: o.status, leaseToken: token },
    {
      status: o.status,
      finishedAt: now,
      error,
      ...done,
      progressMessage: o.status === "succeeded" ? "done" : o.status,
    },
  );
  return true;
}

export interface ReleaseOptions extends QueueOptions {
  /** the job may run again after this delay (back-off) */
  delayMs?: number;
  /** why (kept on Job.error while it waits, so the UI shows the last failure) */
  error?: string | null;
  /**
   * true (default): the attempt counts against maxAttempts, and the job fails instead once none
   * remain (a retryable runner error). false: a graceful worker shutdown, which is not the job's fault.
   */
  countAttempt?: boolean;
}

/**
 * Gives a running job back to the queue, by the worker holding it: `queued` again, or `canceled`
 * if a cancel was requested meanwhile, or `failed` if it counts and no attempts remain.
 * Returns the new status, or false if the lease no longer holds.
 */
export async function release(jobId: string, token: string, opts: ReleaseOptions = {}): Promise<"queued" | "canceled" | "failed" | false> {
  const db = opts.db ?? getDb();
  const countAttempt = opts.countAttempt ?? true;
  for (let i = 0; i < 5; i++) {
    const now = opts.now ?? new Date();
    const cur = await db.job.findUnique({ where: { id: jobId } });
    if (cur?.status !== "running" || cur.leaseToken !== token) return false;
    // Decide from what we read, then apply only if that is still true (cancelRequested may flip).
    const where: Prisma.JobWhereInput = { id: jobId, leaseToken: token, status: "running", cancelRequested: cur.cancelRequested };
    const reason = opts.error ? clip(opts.error, MAX_ERROR_CHARS) : null;
    let target: "queued" | "canceled" | "failed";
    let data: Prisma.JobUpdateManyMutationInput;
    if (cur.cancelRequested) {
      target = "canceled";
      data = { status: "canceled", finishedAt: now, leaseExpiresAt: null };
    } else if (!countAttempt || cur.attempts < cur.maxAttempts) {
      target = "queued";
      data = {
        status: "queued",
        availableAt: new Date(now.getTime() + (opts.delayMs ?? 0)),
        leaseExpiresAt: null,
        error: reason,
        ...(countAttempt ? {} : { attempts: { decrement: 1 } }),
      };
    } else {
      target = "failed";
      data = {
        status: "failed",
        finishedAt: now,
        leaseExpiresAt: null,
        error: clip(`${reason ?? "failed"} (no attempts left: ${cur.attempts}/${cur.maxAttempts})`, MAX_ERROR_CHARS),
      };
    }
    const { count } = await db.job.updateMany({ where, data });
    if (count !== 1) continue;
    await mirrorRun(db, cur.runId, jobId, { status: target, leaseToken: token }, runMirrorOf(target, data, now, reason));
    return target;
  }
  return false;
}

function runMirrorOf(
  target: "queued" | "canceled" | "failed",
  data: Prisma.JobUpdateManyMutationInput,
  now: Date,
  reason: string | null,
): Prisma.RunUpdateManyMutationInput {
  if (target === "queued") {
    return { status: "queued", finishedAt: null, progressMessage: clip(`re-queued${reason ? `: ${reason}` : ""}`, MAX_MESSAGE_CHARS) };
  }
  return { status: target, finishedAt: now, error: (data.error as string | null | undefined) ?? null, progressMessage: target };
}

/**
 * Asks a job to stop. A queued job is canceled at once; a running one gets cancelRequested, which
 * its worker sees at the next heartbeat (about 1 s) and acts on within its cancel grace period.
 * Canceling a canceled job is a no-op; a succeeded or failed job raises InvalidJobTransitionError.
 */
export async function requestCancel(jobId: string, opts: QueueOptions = {}): Promise<Job> {
  const db = opts.db ?? getDb();
  for (let i = 0; i < 5; i++) {
    const now = opts.now ?? new Date();
    const cur = await getJob(jobId, { db });
    if (cur.status === "canceled") return cur;
    if (cur.status === "queued") {
      const { count } = await db.job.updateMany({
        where: { id: jobId, status: "queued", leaseToken: cur.leaseToken },
        data: { status: "canceled", cancelRequested: true, finishedAt: now },
      });
      if (count !== 1) continue; // claimed meanwhile: cancel it as a running job
      await mirrorRun(
        db,
        cur.runId,
        jobId,
        { status: "canceled", leaseToken: cur.leaseToken },
        {
          status: "canceled",
          finishedAt: now,
          progressMessage: "canceled",
        },
      );
      return getJob(jobId, { db });
    }
    if (cur.status === "running") {
      const { count } = await db.job.updateMany({ where: { id: jobId, status: "running", leaseToken: cur.leaseToken }, data: { cancelRequested: true } });
      if (count !== 1) continue;
      await mirrorRun(db, cur.runId, jobId, { status: "running", leaseToken: cur.leaseToken }, { progressMessage: "cancel requested" });
      return getJob(jobId, { db });
    }
    throw new InvalidJobTransitionError(jobId, cur.status, "cancel", "only queued or running jobs can be canceled");
  }
  throw new InvalidJobTransitionError(jobId, "changing", "cancel", "it kept changing state; try again");
}

/** Puts a failed or canceled job back in the queue with its attempts reset (and its Run queued). */
export async function retry(jobId: string, opts: QueueOptions = {}): Promise<Job> {
  const db = opts.db ?? getDb();
  const now = opts.now ?? new Date();
  const cur = await getJob(jobId, { db });
  if (cur.status !== "failed" && cur.status !== "canceled") {
    throw new InvalidJobTransitionError(jobId, cur.status, "retry", "only failed or canceled jobs can be retried");
  }
  const { count } = await db.job.updateMany({
    where: { id: jobId, status: cur.status, leaseToken: cur.leaseToken },
    data: {
      status: "queued",
      attempts: 0,
      cancelRequested: false,
      availableAt: now,
      leaseExpiresAt: null,
      error: null,
      result: Prisma.DbNull,
      progress: 0,
      progressMessage: "",
      startedAt: null,
      finishedAt: null,
    },
  });
  if (count !== 1) {
    const again = await getJob(jobId, { db });
    throw new InvalidJobTransitionError(jobId, again.status, "retry", "it changed state meanwhile");
  }
  await mirrorRun(
    db,
    cur.runId,
    jobId,
    { status: "queued", leaseToken: cur.leaseToken },
    {
      status: "queued",
      progress: 0,
      progressMessage: "queued (retry)",
      error: null,
      startedAt: null,
      finishedAt: null,
    },
  );
  return getJob(jobId, { db });
}

export interface ReapResult {
  requeued: string[];
  failed: string[];
  canceled: string[];
}

/**
 * Takes back running jobs whose lease expired (their worker died or hung): re-queued with
 * exponential back-off while attempts remain, else failed "worker lost: lease expired after N
 * attempts"; canceled instead if a cancel was pending. Safe to run from every worker at once: each
 * transition is conditioned on the very lease that expired.
 */
export async function reapExpired(opts: QueueOptions & { backoffMs?: number; limit?: number } = {}): Promise<ReapResult> {
  const db = opts.db ?? getDb();
  const now = opts.now ?? new Date();
  const backoffMs = opts.backoffMs ?? defaultRetryBackoffMs();
  const out: ReapResult = { requeued: [], failed: [], canceled: [] };
  const expired = await db.job.findMany({
    where: { status: "running", leaseExpiresAt: { lt: now } },
    orderBy: { leaseExpiresAt: "asc" },
    take: opts.limit ?? 100,
    select: { id: true, runId: true, leaseToken: true, leaseOwner: true, attempts: true, maxAttempts: true, cancelRequested: true },
  });
  for (const j of expired) {
    const where: Prisma.JobWhereInput = {
      id: j.id,
      status: "running",
      leaseToken: j.leaseToken,
      leaseExpiresAt: { lt: now },
      cancelRequested: j.cancelRequested,
    };
    let target: "queued" | "canceled" | "failed";
    let data: Prisma.JobUpdateManyMutationInput;
    let line: string;
    if (j.cancelRequested) {
      target = "canceled";
      line = `lease of ${j.leaseOwner} expired with a cancel pending: canceled`;
      data = { status: "canceled", finishedAt: now, leaseExpiresAt: null };
    } else if (j.attempts < j.maxAttempts) {
      target = "queued";
      const delay = retryDelayMs(j.attempts, backoffMs);
      line = `worker lost: lease of ${j.leaseOwner} expired (attempt ${j.attempts}/${j.maxAttempts}); re-queued, retry in ${delay} ms`;
      data = { status: "queued", availableAt: new Date(now.getTime() + delay), leaseExpiresAt: null, error: line };
    } else {
      target = "failed";
      line = `worker lost: lease expired after ${j.attempts} attempts`;
      data = { status: "failed", finishedAt: now, leaseExpiresAt: null, error: line };
    }
    const { count } = await db.job.updateMany({ where, data });
    if (count !== 1) continue; // heartbeat arrived, or another reaper got there first
    await mirrorRun(db, j.runId, j.id, { status: target, leaseToken: j.leaseToken }, runMirrorOf(target, data, now, line));
    (target === "queued" ? out.requeued : target === "failed" ? out.failed : out.canceled).push(j.id);
    await appendLog(j.id, [{ line: `[reaper] ${line}`, level: target === "queued" ? "warn" : "error" }], { db }).catch(() => undefined);
  }
  return out;
}
