// The job-kind registry: every kind of background job is declared here, once. The launch API and
// form (lib/runs), the queue's defaults (lib/jobs/queue.ts) and the worker (workers/) all read it.
//
// This file is light on purpose: the web server imports it. A kind names its runner by module path
// only; the worker's job process (workers/job-process.ts) imports that module when a job of the
// kind starts, so no runner code (PyTorch engine client, onnxruntime) is ever bundled into the server.
import { z } from "zod";
import { importPayloadSchema } from "../schemas/imports";
import { baselineConfigSchema, checkpointEvalConfigSchema, onnxEvalConfigSchema } from "../schemas/runs";
import { trainConfigSchema } from "../schemas/train";
import { trainerLaunchConfigSchema } from "../schemas/trainers";

/** The `selftest` job's payload (it exists to test the queue and the worker: workers/runners/selftest.ts). */
export const SelftestPayloadSchema = z
  .object({
    steps: z.number().int().min(0).max(10_000),
    stepMs: z.number().int().min(0).max(600_000),
    /** spin the CPU for stepMs instead of sleeping, and never await between steps: a runner that never yields */
    busy: z.boolean().default(false),
    /** SIGKILLs the worker process at this step (simulates a dead worker); honoured only with TURNLENS_SELFTEST_ALLOW_CRASH=1 */
    crashAtStep: z.number().int().min(0).optional(),
    /** the job's own process dies at this step, by exit code or by signal (a crashing runner) */
    dieAtStep: z.number().int().min(0).optional(),
    dieWith: z
      .union([z.object({ code: z.number().int().min(0).max(255) }).strict(), z.object({ signal: z.enum(["SIGKILL", "SIGSEGV", "SIGABRT"]) }).strict()])
      .default({ code: 3 }),
    /** throws at this step ... */
    failAtStep: z.number().int().min(0).optional(),
    /** ... on the first failAttempts attempts only (default: every attempt) */
    failAttempts: z.number().int().min(1).optional(),
    /** ... a RetryableJobError (re-queued while attempts remain) instead of a plain Error */
    retryable: z.boolean().default(false),
    /** keeps going after the signal aborts (tests that the worker stops a runner that does not listen) */
    ignoreSignal: z.boolean().default(false),
  })
  .strict();
export type SelftestPayload = z.infer<typeof SelftestPayloadSchema>;

export interface JobKindSpec {
  id: string;
  title: string;
  description: string;
  /** the job's payload; the runner parses it again, and launch validates it (launchable kinds) */
  payload: z.ZodType;
  /** module (path from the project root) and export of the runner; loaded only by the job process */
  runner: { module: string; export: string };
  /** most jobs of this kind one worker runs at once (besides the worker's own --concurrency) */
  concurrency: number;
  /** default wall-clock limit of one attempt, ms (the launch may give another); null: none */
  timeoutMs: number | null;
  /** claims allowed before a lost or retryable job is failed for good */
  maxAttempts: number;
  /** offered by the launch form and POST /runs (its payload is that launch's `config`) */
  launchable: boolean;
}

const HOUR = 3_600_000;

export const JOB_KINDS = {
  baseline: {
    id: "baseline",
    title: "Baseline evaluation",
    description: "A uniformly random admissible-action policy plays K episodes: the floor every trained agent must beat.",
    payload: baselineConfigSchema,
    runner: { module: "workers/runners/baseline.ts", export: "baseline" },
    concurrency: 4,
    timeoutMs: 2 * HOUR,
    maxAttempts: 3,
    launchable: true,
  },
  train: {
    id: "train",
    title: "Training (multi-turn RL)",
    description: "A policy trained with PPO on the PyTorch engine, its credit assigned by the chosen estimator; every turn stored with its advantage.",
    payload: trainConfigSchema,
    runner: { module: "workers/runners/train.ts", export: "train" },
    // one engine (and one GPU) per job; more would only share the same cores
    concurrency: 1,
    // training runs for hours or days and resumes from checkpoints: no default limit
    timeoutMs: null,
    // it resumes from its checkpoints, so a lost worker costs little: allow more attempts
    maxAttempts: 5,
    launchable: true,
  },
  "onnx-eval": {
    id: "onnx-eval",
    title: "Evaluate an exported ONNX policy",
    description:
      "A training run's exported policy plays held-out tasks greedily in onnxruntime-node (no Python): a deployable check of what training produced.",
    payload: onnxEvalConfigSchema,
    runner: { module: "workers/runners/onnx-eval.ts", export: "onnxEval" },
    concurrency: 2,
    timeoutMs: 2 * HOUR,
    maxAttempts: 3,
    launchable: true,
  },
  "checkpoint-eval": {
    id: "checkpoint-eval",
    title: "Evaluate a training checkpoint",
    description:
      "Any checkpoint of a training run, or a Hugging Face checkpoint directory on the worker (a full model or a LoRA adapter, as verl or TRL saved it), plays held-out tasks in the PyTorch engine (the worker's GPU, else CPU): greedy success, pass@k from sampled episodes, mean return, and the overlap with training.",
    payload: checkpointEvalConfigSchema,
    runner: { module: "workers/runners/checkpoint-eval.ts", export: "checkpointEval" },
    // one engine (and one GPU) per job, as training
    concurrency: 1,
    timeoutMs: 2 * HOUR,
    // resumes from the batches it stored
    maxAttempts: 3,
    launchable: true,
  },
  trainer: {
    id: "trainer",
    title: "Your own trainer (a template)",
    description:
      "A training command the operator declared in TURNLENS_TRAINERS (verl, TRL, SkyRL, a script), run by a worker or submitted to Ray with the params given here; its turnlens client logs into this run.",
    payload: trainerLaunchConfigSchema,
    runner: { module: "workers/runners/trainer.ts", export: "trainer" },
    // one trainer per worker: it takes the machine's GPUs (run more workers for more at once)
    concurrency: 1,
    // training runs for hours or days
    timeoutMs: null,
    // a re-run would start the command over into the same run: a lost attempt fails, Retry relaunches it
    maxAttempts: 1,
    launchable: true,
  },
  import: {
    id: "import",
    title: "Import uploaded files",
    description:
      "An uploaded verl dump, TensorBoard log, MLflow store or generic JSONL file read by the Python client's importer and stored through the ingest path: rows imported, rows rejected with reasons.",
    payload: importPayloadSchema,
    runner: { module: "workers/runners/import.ts", export: "importUpload" },
    // reading is CPU-bound Python, writing is SQLite's one writer: two at a time is plenty
    concurrency: 2,
    timeoutMs: 2 * HOUR,
    // idempotent (content-derived batch ids, the run found again by its import id): safe to re-run
    maxAttempts: 3,
    launchable: false,
  },
  selftest: {
    id: "selftest",
    title: "Queue self-test",
    description: "Writes one fenced marker per step; exists to test the job queue and the worker.",
    payload: SelftestPayloadSchema,
    runner: { module: "workers/runners/selftest.ts", export: "selftest" },
    concurrency: 64,
    timeoutMs: HOUR,
    maxAttempts: 3,
    launchable: false,
  },
} as const satisfies Record<string, JobKindSpec>;

export type JobKindId = keyof typeof JOB_KINDS;
export type LaunchableKindId = { [K in JobKindId]: (typeof JOB_KINDS)[K]["launchable"] extends true ? K : never }[JobKindId];

/** Every registered kind, sorted by id. */
export const jobKindIds = (): JobKindId[] => (Object.keys(JOB_KINDS) as JobKindId[]).sort();

/** The declaration of `kind`, or undefined for a kind no worker runs. */
export function getJobKind(kind: string): JobKindSpec | undefined {
  return Object.hasOwn(JOB_KINDS, kind) ? JOB_KINDS[kind as JobKindId] : undefined;
}

/** The kinds the launch form and POST /runs offer, in declaration order. */
export function launchableKinds(): JobKindSpec[] {
  return Object.values(JOB_KINDS).filter((k) => k.launchable);
}
