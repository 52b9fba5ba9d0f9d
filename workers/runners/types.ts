// The contract between the worker (workers/worker.ts) and a job runner (one per job kind, declared in
// lib/jobs/kinds.ts). A runner runs in a job process of its own (workers/job-process.ts); the context
// below reaches the worker over IPC, so it is the same whether or not the runner ever yields.
import type { Fence } from "../../lib/db/raw";

export type { Fence };
export { LeaseLostError } from "../../lib/db/raw";
export { RetryableJobError, isRetryable } from "../../lib/jobs/errors";

export interface JobContext {
  job: { id: string; kind: string; payload: unknown; runId: string | null; attempts: number };
  /** pass to writeTransaction for every result write: it rolls back once this worker lost the job */
  fence: Fence;
  /** aborted on cancel, timeout, worker shutdown, or when the lease is lost; stop promptly (the worker waits a grace period, then kills the job process and everything it started) */
  signal: AbortSignal;
  /** fraction in [0, 1]; rejects with LeaseLostError once the job is no longer this worker's */
  progress(fraction: number, message?: string): Promise<void>;
  /** the GPU(s) the worker gave this job, comma-separated (use as CUDA_VISIBLE_DEVICES for its engine), or null: CPU */
  gpu: string | null;
  /** stored in JobLog (batched) and echoed to the worker's stdout as "[jobId] line" */
  log(line: string, level?: "info" | "warn" | "error"): void;
}

/**
 * Runs one job. The resolved value (JSON) is stored as Job.result. Throwing fails the job with the
 * error's message, or re-queues it (with back-off, while attempts remain) when the error is
 * retryable (RetryableJobError, any error with `retryable: true`, or a full disk). A runner that returns after its
 * signal was aborted is treated as stopped, not completed. Runners parse their payload with zod and
 * should be resumable: a re-run after a lost worker starts again from the last fenced write.
 */
export type JobRunner = (ctx: JobContext) => Promise<unknown>;
