// Dashboard uploads of other trainers' files: the formats (parsed by the Python client's importers,
// clients/python/turnlens/importers), the upload's query, the `import` job's payload and its report.
import { z } from "zod";
import { jobSchema } from "./jobs";

/** Format id -> what the page says to upload. The ids are the Python importers' KINDS. */
export const IMPORT_FORMATS = {
  verl: { title: "verl rollout dump", accepts: "a <step>.jsonl file, or a .tar/.tar.gz/.zip of a trainer.rollout_data_dir" },
  tensorboard: {
    title: "TensorBoard",
    accepts: "an events.out.tfevents.* file, or a .tar/.tar.gz/.zip of a log dir (scalars; histograms, text and images are reported, not imported)",
  },
  mlflow: {
    title: "MLflow tracking store",
    accepts: "mlflow.db (the SQLite store, MLflow 3's default), or a .tar/.tar.gz/.zip of an mlruns/ folder (or one experiment or run folder)",
  },
  trackio: {
    title: "Trackio project",
    accepts:
      "a project's <project>.db from TRACKIO_DIR (default ~/.cache/huggingface/trackio), or a .tar/.tar.gz/.zip of that folder (curves; TRL completions tables and traces as trajectories)",
  },
  wandb: {
    title: "W&B offline run",
    accepts:
      "a run-<id>.wandb file, or a .tar/.tar.gz/.zip of a wandb/offline-run-* folder (or of wandb/); needs the wandb package where the worker runs (curves; TRL completions tables as trajectories)",
  },
  inspect: {
    title: "Inspect eval log",
    accepts: "an Inspect .eval log, or a .tar/.tar.gz/.zip of a folder of them; needs the inspect-ai package where the worker runs",
  },
  chat: { title: "Chat JSONL", accepts: 'a .jsonl file of {"messages": [...], "reward": r} lines (one trajectory per line, a turn per assistant message)' },
  "prime-rl": {
    title: "prime-rl token exports",
    accepts: "a .tar/.tar.gz/.zip of a run's token_exports/ folder (trainer.enable_token_export): per-token ids, logprobs, advantages; no text or rewards",
  },
  "nemo-rl": {
    title: "NeMo-RL GRPO training data",
    accepts: "a train_data_step<N>.jsonl, or a .tar/.tar.gz/.zip of the run's log dir: conversations, token ids, logprobs, advantages",
  },
  slime: {
    title: "slime debug dumps",
    accepts:
      "a .tar/.tar.gz/.zip of the --dump-details folder (or of the --save-debug-rollout-data and --save-debug-train-data files); needs torch where the worker runs",
  },
  skyrl: {
    title: "SkyRL batch dumps",
    accepts:
      "a global_step_<N>_training_input.pkl, or a .tar/.tar.gz/.zip of trainer.export_path or its dumped_data/ (trainer.dump_data_batch): token ids, logprobs, SkyRL's advantages; no text or rewards",
  },
  art: {
    title: "OpenPipe ART model folder",
    accepts:
      "a .tar/.tar.gz/.zip of an .art folder or one <project>/models/<model> folder in it: history.jsonl curves, trajectories/<split>/<step>.parquet trajectories, ART's advantage rule",
  },
  areal: {
    title: "AReaL rollout dumps",
    accepts:
      "a .tar/.tar.gz/.zip of a trial's log folder or its rollout/ folder (rollout.dump_to_file): prompt, completion, reward and policy versions per sequence, a group per task",
  },
  rllm: {
    title: "rLLM episode logs",
    accepts:
      "a .tar/.tar.gz/.zip of an episode_log_dir (or its episodes/ folder) written by rLLM's EpisodeLogger: a trajectory per episode trajectory, grouped by task",
  },
  "verl-file": { title: "verl file logger", accepts: "a <experiment>.jsonl written by trainer.logger=['file'] (metric curves)" },
  trl: { title: "TRL completion tables", accepts: "a completions_<step>.parquet, or a .tar/.tar.gz/.zip of a TRL output_dir or its completions/ folder" },
  jsonl: { title: "Generic JSONL", accepts: "a .jsonl file in the generic format (run / metrics / rollouts / finish lines)" },
} as const;
export const importFormatSchema = z.enum(Object.keys(IMPORT_FORMATS) as [keyof typeof IMPORT_FORMATS, ...(keyof typeof IMPORT_FORMATS)[]]);
export type ImportFormat = z.infer<typeof importFormatSchema>;

const projectSchema = z.string().min(1).max(100);
const runNameSchema = z.string().min(1).max(200);
/** A file's own name: no folders, no leading dot (it is stored under that name). */
export const uploadFilenameSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/, "must be a plain file name (letters, digits, _ . + -; no folders)");

export const importUploadQuerySchema = z
  .object({
    format: importFormatSchema.describe(`Which importer reads the file: ${Object.keys(IMPORT_FORMATS).join(", ")}.`),
    project: projectSchema.default("default").describe("Project of the imported run(s); created if it does not exist."),
    name: runNameSchema.optional().describe("Run name when the upload holds one run; default: from the files."),
    filename: uploadFilenameSchema.describe("The uploaded file's name (its extension tells an archive from a single file)."),
  })
  .strict();
export type ImportUploadQuery = z.infer<typeof importUploadQuerySchema>;

/** Largest upload (TURNLENS_MAX_UPLOAD_MB, default 512 MB). */
export function maxUploadBytes(): number {
  const mb = Number(process.env.TURNLENS_MAX_UPLOAD_MB ?? 512);
  return Number.isFinite(mb) && mb > 0 ? Math.floor(mb * 1024 * 1024) : 512 * 1024 * 1024;
}

/** The `import` job's payload: the stored upload and what to make of it. */
export const importPayloadSchema = z
  .object({
    format: importFormatSchema,
    project: projectSchema,
    name: runNameSchema.optional(),
    filename: uploadFilenameSchema,
    /** absolute path of the stored upload: <upload dir>/<sha256>/<filename> (written by the server only) */
    upload: z.string().regex(/^\/.*\/[0-9a-f]{64}\/[A-Za-z0-9_][A-Za-z0-9_.+-]*$/),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    bytes: z.number().int().min(0),
  })
  .strict();
export type ImportPayload = z.infer<typeof importPayloadSchema>;

const rejectedRowSchema = z.object({ source: z.string(), where: z.string(), reason: z.string() });

/** Job.result of an import job. */
export const importReportSchema = z
  .object({
    runs: z.array(
      z.object({
        runId: z.string(),
        name: z.string(),
        source: z.string().describe("The file or folder inside the upload the run came from."),
        created: z.boolean().describe("false: an earlier import of the same content made this run; its rows were found, not stored again."),
        imported: z.number().int().describe("Rows newly stored."),
        alreadyPresent: z.number().int().describe("Rows an earlier import of the same content had stored."),
        replaced: z.number().int().default(0).describe("Metric values a later value of the same key and step overrode (not stored)."),
        rejected: z.number().int(),
      }),
    ),
    imported: z.number().int(),
    alreadyPresent: z.number().int(),
    replaced: z.number().int().default(0),
    rejected: z.number().int(),
    rejectedRows: z.array(rejectedRowSchema).describe("The first rejected rows with where and why (at most 100)."),
  })
  .meta({ id: "ImportReport" });
export type ImportReport = z.infer<typeof importReportSchema>;
export const REJECTED_SHOWN = 100;

export const importSchema = z
  .object({
    id: z.string().describe("The import job's id (also GET /jobs/{id} and its log)."),
    format: importFormatSchema,
    project: z.string(),
    name: z.string().nullable(),
    filename: z.string(),
    bytes: z.number().int(),
    sha256: z.string(),
    job: jobSchema,
    report: importReportSchema.nullable().describe("Set when the job succeeded."),
  })
  .meta({ id: "Import" });
export type ImportOut = z.infer<typeof importSchema>;
