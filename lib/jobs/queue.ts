// The job queue over the database (README.md beside this file has the state machine).
//
// Every transition is ONE conditional statement (compare-and-swap), so several workers on several
// machines coordinate through the database alone: a claim is one `UPDATE` of the best ready row
// (lib/db/jobs.ts claimNextJob: exactly one claimer changes it); everything a worker does afterwards
// is conditioned on `status = 'running' AND leaseToken = <its token>` (the fencing token, new on
// every claim).
//
// Raw and synchronous like the rest of lib/db (statements in lib/db/jobs.ts): enqueue runs inside
// a caller's write transaction, so a Run and its job are created atomically, and no statement here
// waits on another connection of this process. The linked Run is mirrored right after the job's
// transition by a statement that applies only while the job is still in the state just written
// (same status and lease token): a late mirror write can never overwrite a newer transition's.
import { randomUUID } from "node:crypto";
import type { z } from "zod";
import { LeaseLostError, dbDateTime, getRawDb, writeTransaction, type Fence, type RawDb } from "../db/raw";
import {
  cancelRequested,
  claimNextJob,
  expiredJobs,
  findJob,
  insertQueuedJob,
  jobRunId,
  markRunQueued,
  mirrorToRun,
  runExists,
  updateJobIf,
  type Job,
  type JobChange,
  type JobState,
  type RunChange,
} from "../db/jobs";
import { defaultLeaseMs, defaultRetryBackoffMs, retryDelayMs } from "./config";
import { InvalidJobTransitionError, JobNotFoundError, RunNotFoundError } from "./errors";
import { getJobKind } from "./kinds";
import { appendLog } from "./logs";
import { EnqueueInputSchema, FinishOutcomeSchema, type EnqueueInput, type FinishOutcome } from "./schemas";

export type { Job };

export interface QueueOptions {
  /** connection (default: the process-wide one from getRawDb()) */
  db?: RawDb;
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

// Job.runId never changes: cache it so progress() costs no extra lookup.
const runIds = new Map<string, string | null>();
function runIdOf(db: RawDb, jobId: string): string | null {
  const hit = runIds.get(jobId);
  if (hit !== undefined) return hit;
  const runId = jobRunId(jobId, db);
  if (runIds.size > 10_000) runIds.clear();
  if (runId !== undefined) runIds.set(jobId, runId);
  return runId ?? null;
}

/**
 * Copies a job transition onto its Run, only while the job is still in the state just written
 * (`jobState`: its new status and lease token), so it can never undo a later transition.
 */
function mirrorRun(db: RawDb, runId: string | null, jobState: JobState, change: RunChange): void {
  if (runId) mirrorToRun(runId, jobState, change, db);
}

/** The job row, or JobNotFoundError. */
export async function getJob(jobId: string, opts: QueueOptions = {}): Promise<Job> {
  const job = findJob(jobId, opts.db);
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
 * (lib/runs/launch.ts createRunWithJob). Does not touch the Run. Returns the job id. Throws a ZodError on bad input.
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
  const id = writeTransaction(
    null,
    (raw) => {
      const runId = input.runId ?? null;
      if (runId && !runExists(runId, raw)) throw new RunNotFoundError(runId);
      const jobId = enqueueInTransaction(raw, input, now);
      if (runId) markRunQueued(runId, dbDateTime(now), raw);
      return jobId;
    },
    opts.db,
  );
  return getJob(id, opts);
}

/**
 * Claims the best available job (priority desc, then oldest) for `workerId`, or returns null.
 * One statement marks it running under a new lease (lib/db/jobs.ts claimNextJob): of several
 * workers racing for one job exactly one gets it.
 */
export async function claim(
  workerId: string,
  kinds?: readonly string[] | null,
  opts: LeaseOptions & { jobId?: string | null; excludeKinds?: readonly string[] } = {},
): Promise<ClaimedJob | null> {
  const db = opts.db ?? getRawDb();
  const now = opts.now ?? new Date();
  // excludeKinds: kinds this worker already runs as many of as their registry concurrency allows
  const job = claimNextJob({ workerId, kinds, excludeKinds: opts.excludeKinds, jobId: opts.jobId ?? null, now, leaseMs: opts.leaseMs ?? defaultLeaseMs() }, db);
  if (!job) return null;
  const leaseToken = job.leaseToken!;
  runIds.set(job.id, job.runId);
  mirrorRun(
    db,
    job.runId,
    { id: job.id, status: "running", leaseToken },
    { status: "running", startedAt: now, finishedAt: null, error: null, progressMessage: `running (attempt ${job.attempts}/${job.maxAttempts})` },
  );
  return {
    id: job.id,
    kind: job.kind,
    payload: job.payload,
    runId: job.runId,
    priority: job.priority,
    timeoutMs: job.timeoutMs,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    leaseOwner: workerId,
    leaseToken,
    leaseExpiresAt: job.leaseExpiresAt!,
    fence: { jobId: job.id, leaseToken },
  };
}

/**
 * Extends the lease while the job is still running under `token`; returns whether a cancel was
 * requested. Throws LeaseLostError when the token no longer holds (finished, canceled, reaped or
 * claimed elsewhere): the caller must stop the job and write nothing more.
 * An expired lease that no reaper has acted on yet is still renewed: expiry takes effect only
 * through reapExpired's own compare-and-swap.
 */
export async function heartbeat(jobId: string, token: string, opts: LeaseOptions = {}): Promise<boolean> {
  const db = opts.db ?? getRawDb();
  const now = opts.now ?? new Date();
  const leaseMs = opts.leaseMs ?? defaultLeaseMs();
  const renewed = updateJobIf({ id: jobId, status: "running", leaseToken: token }, { leaseExpiresAt: new Date(now.getTime() + leaseMs), heartbeatAt: now }, db);
  if (!renewed) throw new LeaseLostError(jobId);
  return cancelRequested(jobId, db);
}

/** Records progress (fraction in [0, 1]) on the job and its Run; false if the lease no longer holds. */
export async function progress(jobId: string, token: string, fraction: number, message?: string, opts: QueueOptions = {}): Promise<boolean> {
  if (!Number.isFinite(fraction) || fraction < 0 || fraction > 1) {
    throw new RangeError(`progress fraction must be within [0, 1], got ${fraction}`);
  }
  const db = opts.db ?? getRawDb();
  const change = { progress: fraction, ...(message !== undefined ? { progressMessage: clip(message, MAX_MESSAGE_CHARS) } : {}) };
  const state = { id: jobId, status: "running", leaseToken: token };
  if (!updateJobIf(state, change, db)) return false;
  mirrorRun(db, runIdOf(db, jobId), state, change);
  return true;
}

/**
 * Ends a running job: succeeded, failed or canceled. Applies only while the job is still running
 * under `token`; returns false (and changes nothing) otherwise.
 */
export async function finish(jobId: string, token: string, outcome: FinishOutcome, opts: QueueOptions = {}): Promise<boolean> {
  const db = opts.db ?? getRawDb();
  const now = opts.now ?? new Date();
  const o = FinishOutcomeSchema.parse(outcome);
  const error = o.status === "succeeded" ? null : o.error !== undefined ? clip(o.error, MAX_ERROR_CHARS) : o.status === "failed" ? "failed" : null;
  const done = o.status === "succeeded" ? { progress: 1 } : {};
  const ended = updateJobIf(
    { id: jobId, status: "running", leaseToken: token },
    { status: o.status, finishedAt: now, leaseExpiresAt: null, error, ...done, ...(o.result !== undefined ? { result: JSON.stringify(o.result) } : {}) },
    db,
  );
  if (!ended) return false;
  mirrorRun(
    db,
    runIdOf(db, jobId),
    { id: jobId, status: o.status, leaseToken: token },
    { status: o.status, finishedAt: now, error, ...done, progressMessage: o.status === "succeeded" ? "done" : o.status },
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
  const db = opts.db ?? getRawDb();
  const countAttempt = opts.countAttempt ?? true;
  for (let i = 0; i < 5; i++) {
    const now = opts.now ?? new Date();
    const cur = findJob(jobId, db);
    if (cur?.status !== "running" || cur.leaseToken !== token) return false;
    // Decide from what we read, then apply only if that is still true (cancelRequested may flip).
    const reason = opts.error ? clip(opts.error, MAX_ERROR_CHARS) : null;
    let target: "queued" | "canceled" | "failed";
    let change: JobChange;
    if (cur.cancelRequested) {
      target = "canceled";
      change = { status: "canceled", finishedAt: now, leaseExpiresAt: null };
    } else if (!countAttempt || cur.attempts < cur.maxAttempts) {
      target = "queued";
      change = {
        status: "queued",
        availableAt: new Date(now.getTime() + (opts.delayMs ?? 0)),
        leaseExpiresAt: null,
        error: reason,
        ...(countAttempt ? {} : { attemptsDelta: -1 }),
      };
    } else {
      target = "failed";
      change = {
        status: "failed",
        finishedAt: now,
        leaseExpiresAt: null,
        error: clip(`${reason ?? "failed"} (no attempts left: ${cur.attempts}/${cur.maxAttempts})`, MAX_ERROR_CHARS),
      };
    }
    if (!updateJobIf({ id: jobId, status: "running", leaseToken: token, cancelRequested: cur.cancelRequested }, change, db)) continue;
    mirrorRun(db, cur.runId, { id: jobId, status: target, leaseToken: token }, runMirrorOf(target, change, now, reason));
    return target;
  }
  return false;
}

function runMirrorOf(target: "queued" | "canceled" | "failed", change: JobChange, now: Date, reason: string | null): RunChange {
  if (target === "queued") {
    return { status: "queued", finishedAt: null, progressMessage: clip(`re-queued${reason ? `: ${reason}` : ""}`, MAX_MESSAGE_CHARS) };
  }
  return { status: target, finishedAt: now, error: change.error ?? null, progressMessage: target };
}

/**
 * Asks a job to stop. A queued job is canceled at once; a running one gets cancelRequested, which
 * its worker sees at the next heartbeat (about 1 s) and acts on within its cancel grace period.
 * Canceling a canceled job is a no-op; a succeeded or failed job raises InvalidJobTransitionError.
 */
export async function requestCancel(jobId: string, opts: QueueOptions = {}): Promise<Job> {
  const db = opts.db ?? getRawDb();
  for (let i = 0; i < 5; i++) {
    const now = opts.now ?? new Date();
    const cur = await getJob(jobId, { db });
    if (cur.status === "canceled") return cur;
    if (cur.status === "queued") {
      const state = { id: jobId, status: "queued", leaseToken: cur.leaseToken };
      if (!updateJobIf(state, { status: "canceled", cancelRequested: true, finishedAt: now }, db)) continue; // claimed meanwhile: cancel it as a running job
      mirrorRun(db, cur.runId, { ...state, status: "canceled" }, { status: "canceled", finishedAt: now, progressMessage: "canceled" });
      return getJob(jobId, { db });
    }
    if (cur.status === "running") {
      const state = { id: jobId, status: "running", leaseToken: cur.leaseToken };
      if (!updateJobIf(state, { cancelRequested: true }, db)) continue;
      mirrorRun(db, cur.runId, state, { progressMessage: "cancel requested" });
      return getJob(jobId, { db });
    }
    throw new InvalidJobTransitionError(jobId, cur.status, "cancel", "only queued or running jobs can be canceled");
  }
  throw new InvalidJobTransitionError(jobId, "changing", "cancel", "it kept changing state; try again");
}

/** Puts a failed or canceled job back in the queue with its attempts reset (and its Run queued). */
export async function retry(jobId: string, opts: QueueOptions = {}): Promise<Job> {
  const db = opts.db ?? getRawDb();
  const now = opts.now ?? new Date();
  const cur = await getJob(jobId, { db });
  if (cur.status !== "failed" && cur.status !== "canceled") {
    throw new InvalidJobTransitionError(jobId, cur.status, "retry", "only failed or canceled jobs can be retried");
  }
  const requeued = updateJobIf(
    { id: jobId, status: cur.status, leaseToken: cur.leaseToken },
    {
      status: "queued",
      attempts: 0,
      cancelRequested: false,
      availableAt: now,
      leaseExpiresAt: null,
      error: null,
      result: null,
      progress: 0,
      progressMessage: "",
      startedAt: null,
      finishedAt: null,
    },
    db,
  );
  if (!requeued) {
    const again = await getJob(jobId, { db });
    throw new InvalidJobTransitionError(jobId, again.status, "retry", "it changed state meanwhile");
  }
  mirrorRun(
    db,
    cur.runId,
    { id: jobId, status: "queued", leaseToken: cur.leaseToken },
    { status: "queued", progress: 0, progressMessage: "queued (retry)", error: null, startedAt: null, finishedAt: null },
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
  const db = opts.db ?? getRawDb();
  const now = opts.now ?? new Date();
  const backoffMs = opts.backoffMs ?? defaultRetryBackoffMs();
  const out: ReapResult = { requeued: [], failed: [], canceled: [] };
  for (const j of expiredJobs(now, opts.limit ?? 100, db)) {
    let target: "queued" | "canceled" | "failed";
    let change: JobChange;
    let line: string;
    if (j.cancelRequested) {
      target = "canceled";
      line = `lease of ${j.leaseOwner} expired with a cancel pending: canceled`;
      change = { status: "canceled", finishedAt: now, leaseExpiresAt: null };
    } else if (j.attempts < j.maxAttempts) {
      target = "queued";
      const delay = retryDelayMs(j.attempts, backoffMs);
      line = `worker lost: lease of ${j.leaseOwner} expired (attempt ${j.attempts}/${j.maxAttempts}); re-queued, retry in ${delay} ms`;
      change = { status: "queued", availableAt: new Date(now.getTime() + delay), leaseExpiresAt: null, error: line };
    } else {
      target = "failed";
      line = `worker lost: lease expired after ${j.attempts} attempts`;
      change = { status: "failed", finishedAt: now, leaseExpiresAt: null, error: line };
    }
    const state = { id: j.id, status: "running", leaseToken: j.leaseToken, leaseExpiredBefore: now, cancelRequested: j.cancelRequested };
    if (!updateJobIf(state, change, db)) continue; // heartbeat arrived, or another reaper got there first
    mirrorRun(db, j.runId, { id: j.id, status: target, leaseToken: j.leaseToken }, runMirrorOf(target, change, now, line));
    (target === "queued" ? out.requeued : target === "failed" ? out.failed : out.canceled).push(j.id);
    await appendLog(j.id, [{ line: `[reaper] ${line}`, level: target === "queued" ? "warn" : "error" }], { db }).catch(() => undefined);
  }
  return out;
}
