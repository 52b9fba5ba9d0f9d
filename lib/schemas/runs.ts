// Run launch, listing and output schemas.
import { z } from "zod";
import { idSchema, queryInt, runKindSchema, runStatusSchema, tagsSchema, TERMINAL_STATUSES } from "./common";
import { trainConfigSchema } from "./train";
import { trainerLaunchConfigSchema } from "./trainers";
import { InvalidInputError } from "./errors";
import { sweepParamsSchema } from "./sweeps";

/** The baseline evaluation job: a uniformly random admissible-action policy plays K episodes. */
export const baselineConfigSchema = z
  .object({
    envId: z.string().min(1).describe("Environment id from the environment registry."),
    envConfig: z.record(z.string(), z.unknown()).default({}).describe("Environment config; omitted fields take the environment's defaults."),
    episodes: z.number().int().min(1).max(100_000).default(200).describe("Number of episodes K to play."),
    groupSize: z.number().int().min(1).max(64).default(8).describe("Episodes per task group: G episodes share one task seed, as in GRPO."),
    episodesPerBatch: z.number().int().min(1).max(10_000).default(40).describe("Episodes per stored batch (one point on the per-batch curves)."),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .default(0)
      .describe("Seed of the task seeds and of the random policy."),
  })
  .strict();

/** Evaluate a trained run's exported ONNX policy in onnxruntime-node on held-out tasks. */
export const onnxEvalConfigSchema = z
  .object({
    sourceRunId: idSchema.describe("The training run whose exported ONNX policy is evaluated."),
    checkpointStep: z.number().int().min(0).nullable().default(null).describe("Checkpoint step with an ONNX export; none: the latest."),
    episodes: z.number().int().min(1).max(100_000).default(200).describe("Held-out tasks to play (the same seeds the training run's greedy evaluation used)."),
    episodesPerBatch: z.number().int().min(1).max(10_000).default(50).describe("Episodes per stored batch (one point on the curves)."),
  })
  .strict();

/**
 * A Hugging Face checkpoint directory on the worker that no TurnLens run made (what verl or TRL
 * saved): a full model, or a LoRA adapter on the base model its adapter_config.json names. A path
 * only: the worker checks it is a directory with config.json or adapter_config.json, and reads it.
 */
export const outsideCheckpointSchema = z
  .object({
    path: z
      .string()
      .min(2)
      .max(4096)
      .regex(/^\//, "must be an absolute path on the worker")
      .refine((p) => !p.split("/").includes(".."), "must not contain ..")
      .describe("The checkpoint directory on the worker: a full model (config.json) or a LoRA adapter (adapter_config.json naming its base model directory)."),
    envId: z.string().min(1).max(100).describe("The environment whose held-out tasks it plays."),
    envConfig: z.record(z.string(), z.unknown()).default({}).describe("Environment config; omitted fields take the environment's defaults."),
    heldOutEpisodes: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(200)
      .describe("Size of the environment's held-out set (a training run's evalEpisodes): the tasks are its first `episodes` instances."),
    instructions: z.boolean().default(true).describe("Put the environment's instructions in every prompt (what pretrained models need)."),
  })
  .strict();
export type OutsideCheckpoint = z.infer<typeof outsideCheckpointSchema>;

/**
 * Evaluate any checkpoint of a training run (tiny or Hugging Face, LoRA or not), or an outside
 * Hugging Face checkpoint, in the PyTorch engine on held-out tasks: greedy success, and pass@k
 * from sampled episodes.
 */
export const checkpointEvalConfigSchema = z
  .object({
    sourceRunId: idSchema.optional().describe("The training run whose checkpoint is evaluated (or `checkpoint`)."),
    checkpoint: outsideCheckpointSchema.nullable().default(null).describe("Instead of a run's checkpoint: a Hugging Face checkpoint directory on the worker."),
    checkpointStep: z.number().int().min(0).nullable().default(null).describe("Training step of the checkpoint to evaluate; none: the latest."),
    episodes: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe("Held-out tasks to play (the first of the instances the training run's greedy evaluation uses, never trained on)."),
    greedy: z.boolean().default(true).describe("Play each task once with the most likely action at every turn (greedy success)."),
    sampled: z.boolean().default(false).describe("Also sample `samples` episodes per task at `temperature`: pass@k and the per-sample success rate."),
    k: z.number().int().min(1).max(256).default(4).describe("pass@k: the chance that at least one of k sampled episodes succeeds."),
    samples: z
      .number()
      .int()
      .min(1)
      .max(256)
      .nullable()
      .default(null)
      .describe("Episodes sampled per task, n >= k (the unbiased pass@k estimator uses all n); none: k."),
    temperature: z.number().positive().max(5).nullable().default(null).describe("Sampling temperature; none: the training run's."),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .default(0)
      .describe("Seed of the sampled episodes."),
    episodesPerBatch: z.number().int().min(1).max(10_000).default(50).describe("Tasks per stored batch (one point on the curves)."),
    device: z.enum(["auto", "cpu", "cuda"]).default("auto").describe("auto: the worker's GPU where it has one, else CPU."),
    threads: z.number().int().min(1).max(256).nullable().default(1).describe("torch CPU threads (null: torch's default)."),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (!c.greedy && !c.sampled) ctx.addIssue({ code: "custom", path: ["sampled"], message: "pick greedy, sampled or both" });
    if ((c.sourceRunId === undefined) === (c.checkpoint === null))
      ctx.addIssue({
        code: "custom",
        path: ["sourceRunId"],
        message: "give sourceRunId (a training run's checkpoint) or checkpoint (a directory on the worker), one of them",
      });
    if (c.checkpoint && c.checkpointStep !== null)
      ctx.addIssue({ code: "custom", path: ["checkpointStep"], message: "applies to a training run's checkpoints (sourceRunId) only" });
    if (c.samples !== null && c.samples < c.k)
      ctx.addIssue({ code: "custom", path: ["samples"], message: `must be at least k (${c.k}): pass@k needs k samples per task` });
  });
export type CheckpointEvalConfig = z.infer<typeof checkpointEvalConfigSchema>;

/**
 * The checkpoint a checkpoint-eval config names among its source run's (sorted by step), or an
 * InvalidInputError naming the field under `root` (body.config at launch, config in the job):
 * an unknown run (`source` null), a run that is not a training run, a step without a checkpoint.
 */
export function checkpointToEvaluate<C extends { step: number }>(
  cfg: Pick<CheckpointEvalConfig, "sourceRunId" | "checkpointStep">,
  source: { id: string; name?: string; jobKind: string | null } | null,
  checkpoints: readonly C[],
  root: string,
): C {
  const fail = (field: string, message: string): never => {
    throw new InvalidInputError(`${root}.${field}: ${message}`, [{ path: `${root}.${field}`, message }]);
  };
  if (!source) return fail("sourceRunId", `unknown run "${cfg.sourceRunId}"`);
  if (source.jobKind !== "train")
    return fail("sourceRunId", `run ${source.id} is not a training run (its job kind is ${source.jobKind ?? "none: an imported run"})`);
  if (!checkpoints.length) return fail("checkpointStep", `run ${source.id} has no checkpoint yet (it saves one every checkpointInterval steps)`);
  const ckpt = cfg.checkpointStep === null ? checkpoints.at(-1) : checkpoints.find((c) => c.step === cfg.checkpointStep);
  return (
    ckpt ??
    fail(
      "checkpointStep",
      `run ${source.id} has no checkpoint at step ${cfg.checkpointStep} (its checkpoints: steps ${checkpoints.map((c) => c.step).join(", ")})`,
    )
  );
}

const launchCommon = {
  project: z.string().min(1).max(100).default("default").describe("Project name; created if it does not exist."),
  name: z.string().min(1).max(200).optional().describe("Run name; generated from the config when omitted."),
  tags: tagsSchema.describe("Free-form tags for filtering."),
  notes: z.string().max(10_000).default(""),
  parentRunId: idSchema.optional().describe("The run this one was cloned from."),
};

/** How the launched run's job is queued (lib/jobs). */
const launchJob = {
  priority: z.number().int().min(-100).max(100).default(0).describe("Queue priority: higher is claimed first; ties in launch order."),
  timeoutMs: z
    .number()
    .int()
    .min(1_000)
    .max(2 ** 31 - 1)
    .nullable()
    .optional()
    .describe("Wall-clock limit of one attempt in ms; omitted: the job kind's default; null: none."),
};

// One option per launchable kind of the job-kind registry (lib/jobs/kinds.ts, which takes each
// `config` schema from here; test/jobs/list.test.ts checks the two agree).
export const launchRunSchema = z
  .discriminatedUnion("jobKind", [
    z.object({ jobKind: z.literal("baseline"), config: baselineConfigSchema, ...launchCommon, ...launchJob }).strict(),
    z.object({ jobKind: z.literal("train"), config: trainConfigSchema, ...launchCommon, ...launchJob }).strict(),
    z.object({ jobKind: z.literal("onnx-eval"), config: onnxEvalConfigSchema, ...launchCommon, ...launchJob }).strict(),
    z.object({ jobKind: z.literal("checkpoint-eval"), config: checkpointEvalConfigSchema, ...launchCommon, ...launchJob }).strict(),
    z.object({ jobKind: z.literal("trainer"), config: trainerLaunchConfigSchema, ...launchCommon, ...launchJob }).strict(),
  ])
  .meta({ id: "LaunchRun" });
export type LaunchRun = z.infer<typeof launchRunSchema>;

/** A source's own timestamp: ISO 8601 with a time zone, in the years 1990-2099 (a pattern the OpenAPI document carries). */
export const sourceTime = z
  .string()
  .datetime({ offset: true })
  .regex(/^(199\d|20\d\d)-/, "must be a time in the years 1990-2099");

/** A run created by an external trainer (verl, TRL, own code) that then streams metrics and rollouts in. */
export const importRunSchema = z
  .object({
    project: launchCommon.project,
    name: z.string().min(1).max(200),
    config: z.record(z.string(), z.unknown()).default({}).describe("The trainer's config, stored as given."),
    envId: z.string().max(100).optional(),
    estimator: z.string().max(100).optional(),
    seed: z.number().int().default(0),
    tags: launchCommon.tags,
    notes: launchCommon.notes,
    startedAt: sourceTime
      .optional()
      .describe("When the source run started (an importer sends the training's own time); the run's creation time too. Default: now."),
    finishedAt: sourceTime.optional().describe("When the source run ended, if it already has."),
  })
  .strict()
  .refine((b) => !b.startedAt || !b.finishedAt || Date.parse(b.startedAt) <= Date.parse(b.finishedAt), { path: ["finishedAt"], message: "is before startedAt" })
  .meta({ id: "ImportRun" });
export type ImportRun = z.infer<typeof importRunSchema>;

/** POST /runs/{id}/finish: an external trainer marks its imported run finished. */
export const finishRunSchema = z
  .object({
    status: z.enum(TERMINAL_STATUSES).default("succeeded"),
    error: z.string().max(8000).optional(),
    finishedAt: sourceTime.optional().describe("When the source run ended (an importer sends the training's own time). Default: now."),
  })
  .strict();

export const runSortSchema = z.enum(["createdAt", "name", "status", "envId", "estimator"]);

/** One config-value filter clause: `path op value`, e.g. `envConfig.size>=6` (see parseConfigFilter). */
export interface ConfigClause {
  /** dotted path into the run's config */
  path: string[];
  op: "=" | "!=" | ">" | ">=" | "<" | "<=" | "~";
  value: string | number | boolean | null;
}

/**
 * Parses a config filter: clauses separated by `;`, each `path op value` with op one of
 * = != > >= < <= and ~ (contains). Values: numbers, true/false/null, else text (quotes optional).
 * Throws an Error naming the bad clause.
 */
export function parseConfigFilter(text: string): ConfigClause[] {
  const out: ConfigClause[] = [];
  for (const raw of text.split(";")) {
    const clause = raw.trim();
    if (!clause) continue;
    // `s`: a text value may hold line breaks (the documented pattern allows any text without ';').
    const m = clause.match(/^([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*(>=|<=|!=|=|>|<|~)\s*(.*)$/s);
    if (!m) throw new Error(`"${clause}" is not a filter clause like lr>=1e-4 or envConfig.size=6`);
    const v = m[3].trim();
    let value: ConfigClause["value"];
    if (/^(["']).*\1$/s.test(v)) value = v.slice(1, -1);
    else if (v === "true" || v === "false") value = v === "true";
    else if (v === "null") value = null;
    else if (v !== "" && Number.isFinite(Number(v))) value = Number(v);
    else value = v;
    const op = m[2] as ConfigClause["op"];
    if ((op === ">" || op === ">=" || op === "<" || op === "<=") && typeof value !== "number") throw new Error(`"${clause}": ${op} needs a number`);
    out.push({ path: m[1].split("."), op, value });
  }
  return out;
}

// The grammar parseConfigFilter reads, as a pattern the OpenAPI document can carry: comparisons
// take a decimal number, = != ~ any text without ';'.
const CONFIG_PATH = "[A-Za-z_][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*";
const CONFIG_CLAUSE = `${CONFIG_PATH} *((=|!=|~)[^;]*|(>=|<=|>|<) *-?[0-9]{1,15}(\\.[0-9]{1,15})?([eE][-+]?[0-9]{1,2})? *)`;
const CONFIG_FILTER_PATTERN = new RegExp(`^ *(${CONFIG_CLAUSE})?( *; *(${CONFIG_CLAUSE})?)* *$`);

export const runListQuerySchema = z
  .object({
    q: z.string().max(200).optional().describe("Search in run names."),
    status: runStatusSchema.optional(),
    kind: runKindSchema.optional(),
    envId: z.string().max(100).optional(),
    estimator: z.string().max(100).optional(),
    project: z.string().max(100).optional(),
    tag: z.string().max(64).optional(),
    sweep: idSchema.optional().describe("Only the runs of this sweep."),
    config: z
      .string()
      .max(2000)
      .regex(CONFIG_FILTER_PATTERN, "must be clauses like lr<=1e-4 or envConfig.size=6, joined by ;")
      .optional()
      .superRefine((s, ctx) => {
        try {
          if (s) parseConfigFilter(s);
        } catch (e) {
          ctx.addIssue({ code: "custom", message: (e as Error).message });
        }
      })
      .describe("Config-value filter: clauses `path op value` joined by `;`, op one of = != > >= < <= ~ (contains), e.g. `lr<=1e-4;envConfig.size=6`."),
    sort: z
      .union([runSortSchema, z.string().regex(/^metric:[\w/.-]+$/, "metric sort keys look like metric:rollout/success_rate")])
      .default("createdAt")
      .describe("A run column, or metric:<key> to sort by a metric's last value."),
    order: z.enum(["asc", "desc"]).default("desc"),
    page: queryInt(1, 1_000_000).default(1),
    pageSize: queryInt(1, 500).default(50),
  })
  .strict();
export type RunListQuery = z.infer<typeof runListQuerySchema>;

export const runSchema = z
  .object({
    id: z.string(),
    projectId: z.string(),
    project: z.string(),
    name: z.string(),
    kind: runKindSchema,
    status: runStatusSchema,
    jobKind: z.string().nullable(),
    config: z.unknown(),
    envId: z.string().nullable(),
    estimator: z.string().nullable(),
    seed: z.number(),
    tags: z.array(z.string()),
    notes: z.string(),
    progress: z.number(),
    progressMessage: z.string(),
    error: z.string().nullable(),
    parentRunId: z.string().nullable(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    jobId: z.string().nullable(),
    sweepId: z.string().nullable().describe("The sweep that launched the run (POST /sweeps), if any."),
    sweepParams: sweepParamsSchema.nullable().describe("The sweep's grid point: the values set at each varied path, and the seed."),
    summary: z.record(z.string(), z.number()).describe("Last value of each metric."),
  })
  .meta({ id: "Run" });
export type RunOut = z.infer<typeof runSchema>;

/** POST /runs/import's answer: the run and its write key, which no other call returns. */
export const importedRunSchema = runSchema
  .extend({ writeKey: z.string().describe("Send as X-TurnLens-Write-Key with every write to this run (metrics, steps, finish, resume).") })
  .meta({ id: "ImportedRun" });

export const runListSchema = z.object({ runs: z.array(runSchema), total: z.number(), page: z.number(), pageSize: z.number() }).meta({ id: "RunList" });
export type RunList = z.infer<typeof runListSchema>;

/** What the runs table can filter and sort by (GET /runs/filters). */
export const runFiltersSchema = z
  .object({
    projects: z.array(z.string()).describe("Projects that hold runs."),
    envIds: z.array(z.string()),
    estimators: z.array(z.string()),
    tags: z.array(z.string()),
    kinds: z.array(z.string()),
    metricKeys: z.array(z.object({ key: z.string(), runs: z.number() })).describe("Metric keys with the number of runs that log them, most common first."),
    configKeys: z.array(z.string()).describe("Dotted config paths seen in the most recent runs (leaves only)."),
  })
  .meta({ id: "RunFilters" });
export type RunFilters = z.infer<typeof runFiltersSchema>;

export const compareQuerySchema = z
  .object({
    runs: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}(,[A-Za-z0-9_-]{1,64}){0,49}$/, "must be 1 to 50 comma-separated run ids")
      .transform((s) =>
        s
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean),
      )
      .pipe(z.array(idSchema).min(1, "name at least one run").max(50, "compare at most 50 runs"))
      .describe("Comma-separated run ids."),
  })
  .strict();

/** GET /compare: the runs to compare and the union of their metric keys. */
export const runComparisonSchema = z
  .object({
    runs: z.array(runSchema),
    keys: z.array(z.object({ key: z.string(), runs: z.number().describe("How many of the runs log this key.") })).describe("Most common first, then by key."),
  })
  .meta({ id: "RunComparison" });
export type RunComparison = z.infer<typeof runComparisonSchema>;

/** GET /runs/{id}/checkpoints: the steps a training run saved its weights at (the checkpoint-eval job evaluates any of them). */
export const checkpointListSchema = z
  .object({
    checkpoints: z.array(z.object({ step: z.number(), onnx: z.boolean().describe("An ONNX export was saved beside the weights.") })).describe("Oldest first."),
  })
  .meta({ id: "CheckpointList" });
export type CheckpointList = z.infer<typeof checkpointListSchema>;

/** GET /projects. */
export const projectListSchema = z
  .object({ projects: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), runs: z.number().describe("Runs in the project.") })) })
  .meta({ id: "ProjectList" });
export type ProjectList = z.infer<typeof projectListSchema>;

/** GET /envs: the environments a run can be launched on, each config as JSON Schema (for generated forms). */
export const envCatalogSchema = z
  .object({
    envs: z.array(
      z.object({
        id: z.string(),
        title: z.string(),
        description: z.string(),
        configSchema: z.record(z.string(), z.unknown()).describe("The environment config's JSON Schema (input side: fields with defaults are optional)."),
      }),
    ),
  })
  .meta({ id: "EnvCatalog" });
export type EnvCatalog = z.infer<typeof envCatalogSchema>;
