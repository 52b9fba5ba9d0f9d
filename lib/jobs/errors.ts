// Typed errors of the job queue, in the one hierarchy (lib/schemas/errors.ts): lib/api maps their
// `kind` (not_found, conflict) to a status; runners throw `RetryableJobError` to ask for another attempt.
import { LeaseLostError } from "../db/raw";
import { DomainError, isDiskFull, type ErrorKind } from "../schemas/errors";

export { LeaseLostError };

/** Base class: an error the HTTP layer can answer with its `kind` and `message` as is. */
export class JobQueueError extends DomainError {
  constructor(message: string, kind: ErrorKind = "invalid") {
    super(kind, message);
  }
}

export class JobNotFoundError extends JobQueueError {
  constructor(readonly jobId: string) {
    super(`job ${jobId} not found`, "not_found");
  }
}

/** enqueue({runId}) named a run that does not exist. */
export class RunNotFoundError extends JobQueueError {
  constructor(readonly runId: string) {
    super(`run ${runId} not found`, "not_found");
  }
}

/** The job is not in a state the action applies to (e.g. retry of a succeeded job). */
export class InvalidJobTransitionError extends JobQueueError {
  constructor(
    readonly jobId: string,
    readonly from: string,
    readonly action: string,
    detail?: string,
  ) {
    super(`cannot ${action} job ${jobId}: it is ${from}${detail ? ` (${detail})` : ""}`, "conflict");
  }
}

/**
 * Thrown by a runner for a transient failure (a flaky download, a busy GPU): the worker re-queues the
 * job with back-off while attempts remain, and fails it otherwise. Any error with `retryable === true`
 * counts, so runners need not import this class, and so does a full disk (isDiskFull: ENOSPC, EDQUOT,
 * SQLITE_FULL), which a later attempt survives once space is freed.
 */
export class RetryableJobError extends Error {
  readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RetryableJobError";
  }
}

export function isRetryable(err: unknown): boolean {
  return (typeof err === "object" && err !== null && (err as { retryable?: unknown }).retryable === true) || isDiskFull(err);
}
