// zod schemas of the job queue's inputs, shared by the API routes, the CLI and the worker.
import { z } from "zod";
import { STATUSES, TERMINAL_STATUSES } from "../schemas/common";

export const JOB_STATUSES = STATUSES;
export const JobStatusSchema = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatusSchema>;

export { TERMINAL_STATUSES };

export const JobKindSchema = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, "a job kind is lower-case letters, digits, '-' or '_' (at most 64)");

/** enqueue() input. `payload` is validated again, strictly, by the runner of its kind. */
export const EnqueueInputSchema = z
  .object({
    kind: JobKindSchema,
    /** any JSON value; the runner of `kind` parses it */
    payload: z.json().default({}),
    /** the Run this job produces; its status/progress mirror the job's */
    runId: z.string().min(1).nullish(),
    /** higher runs first; ties run in creation order */
    priority: z.number().int().min(-1_000_000).max(1_000_000).default(0),
    /** claims allowed before a lost or retryable job is failed for good (default: the kind's, else 3) */
    maxAttempts: z.number().int().min(1).max(100).optional(),
    /** wall-clock limit of one attempt in ms; undefined: the kind's default (lib/jobs/kinds.ts); null: none */
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(2 ** 31 - 1)
      .nullable()
      .optional(),
    /** do not run before this time (default: now) */
    availableAt: z.coerce.date().optional(),
  })
  .strict();

export type EnqueueInput = z.input<typeof EnqueueInputSchema>;

/** finish() outcome; `result` is stored as Job.result (any JSON), `error` as Job.error and Run.error. */
export const FinishOutcomeSchema = z
  .object({
    status: z.enum(TERMINAL_STATUSES),
    error: z.string().optional(),
    result: z.json().optional(),
  })
  .strict();
export type FinishOutcome = z.input<typeof FinishOutcomeSchema>;
