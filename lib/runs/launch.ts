// Launching runs: validate the config against the registries, then create the run and its job.
import type { z } from "zod";
import { envRegistry, getEnvSpec } from "../envs/registry";
import { getEstimator, ESTIMATOR_IDS } from "../credit";
import { createRun, getRun, importedRun, type NewRun } from "../db/runs";
import { getJobKind, launchableKinds, type LaunchableKindId } from "../jobs/kinds";
import { enqueueInTransaction } from "../jobs/queue";
import { writeTransaction } from "../db/raw";
import type { EnqueueInput } from "../jobs/schemas";
import { errorKind, InvalidInputError, zodIssues, type Issue } from "../schemas/errors";
import { checkpointToEvaluate, type ImportRun, type LaunchRun } from "../schemas/runs";
import { listCheckpoints } from "../db/checkpoints";
import { resolveTrainer } from "../jobs/trainers";

/** A launch config that passed its own schema but not a registry's (unknown id, bad env config or params). */
export class LaunchConfigError extends InvalidInputError {
  constructor(message: string, issues: Issue[]) {
    super(message, issues);
  }
}

/**
 * Looks `id` up in a registry and parses `value` with the schema it names, or throws
 * LaunchConfigError naming the field: `${root}.${idField}` for an unknown id, `${root}.${valueField}.x` for a bad value.
 */
function parseWithRegistry(
  what: string,
  id: string,
  known: readonly string[],
  schemaOf: (id: string) => z.ZodType | undefined,
  value: unknown,
  root: string,
  idField: string,
  valueField: string,
  valueLabel: string,
): Record<string, unknown> {
  const schema = known.includes(id) ? schemaOf(id) : undefined;
  if (!schema) {
    const list = known.join(", ");
    throw new LaunchConfigError(`${root}.${idField}: unknown ${what} "${id}" (known: ${list})`, [
      { path: `${root}.${idField}`, message: `unknown ${what}; known: ${list}` },
    ]);
  }
  const r = schema.safeParse(value ?? {});
  if (!r.success) {
    const issues = zodIssues(r.error, `${root}.${valueField}`);
    throw new LaunchConfigError(`invalid ${id} ${valueLabel}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, issues);
  }
  return r.data as Record<string, unknown>;
}

/** Parses an environment config with its registry schema, naming the offending field under `root`. */
export function parseEnvConfig(envId: string, envConfig: unknown, root: string): Record<string, unknown> {
  return parseWithRegistry(
    "environment",
    envId,
    Object.keys(envRegistry),
    (id) => getEnvSpec(id).configSchema as z.ZodType,
    envConfig,
    root,
    "envId",
    "envConfig",
    "config",
  );
}

type LaunchOf<K extends LaunchableKindId> = Extract<LaunchRun, { jobKind: K }>;
/** The run a launch creates, and the payload its job gets (after the registries' own validation). */
type Prepared = { run: Omit<NewRun, "project" | "tags" | "notes" | "jobKind">; payload: unknown };

// How each launchable kind of the job-kind registry (lib/jobs/kinds.ts) becomes a run: keyed by the
// registry's launchable ids, so a kind declared launchable without an entry here does not compile.
const prepare: { [K in LaunchableKindId]: (body: LaunchOf<K>) => Prepared } = {
  baseline: (body) => {
    const envConfig = parseEnvConfig(body.config.envId, body.config.envConfig, "body.config");
    const config = { ...body.config, envConfig };
    return {
      run: {
        name: body.name ?? `baseline-${body.config.envId}-s${body.config.seed}`,
        kind: "eval",
        config,
        envId: body.config.envId,
        estimator: null,
        seed: body.config.seed,
        parentRunId: body.parentRunId,
      },
      payload: config,
    };
  },
  train: (body) => {
    const envConfig = parseEnvConfig(body.config.envId, body.config.envConfig, "body.config");
    const estimatorParams = parseEstimatorParams(body.config.estimator, body.config.estimatorParams, "body.config");
    const config = { ...body.config, envConfig, estimatorParams };
    return {
      run: {
        name: body.name ?? `train-${body.config.envId}-${body.config.estimator}-s${body.config.seed}`,
        kind: "train",
        config,
        envId: body.config.envId,
        estimator: body.config.estimator,
        seed: body.config.seed,
        parentRunId: body.parentRunId,
      },
      payload: config,
    };
  },
  "onnx-eval": (body) => {
    const source = getRun(body.config.sourceRunId); // 404 for an unknown run
    if (source.jobKind !== "train")
      throw new LaunchConfigError(`body.config.sourceRunId: run ${source.id} is not a training run`, [
        { path: "body.config.sourceRunId", message: "not a training run" },
      ]);
    return {
      run: {
        name: body.name ?? `onnx-eval-${source.name}`,
        kind: "eval",
        config: body.config,
        envId: source.envId,
        estimator: null,
        seed: 0,
        parentRunId: body.parentRunId ?? source.id,
      },
      payload: body.config,
    };
  },
  "checkpoint-eval": (body) => {
    const outside = body.config.checkpoint;
    if (outside) {
      // a directory on the worker: its existence and contents are the worker's to check (the job names the field)
      const envConfig = parseEnvConfig(outside.envId, outside.envConfig, "body.config.checkpoint");
      const config = { ...body.config, checkpoint: { ...outside, envConfig } };
      return {
        run: {
          name: body.name ?? `checkpoint-eval-${outside.path.split("/").filter(Boolean).at(-1)}-${outside.envId}`,
          kind: "eval",
          config,
          envId: outside.envId,
          estimator: null,
          seed: body.config.seed,
          parentRunId: body.parentRunId,
        },
        payload: config,
      };
    }
    let source: ReturnType<typeof getRun> | null = null;
    try {
      source = getRun(body.config.sourceRunId!);
    } catch (err) {
      if (errorKind(err) !== "not_found") throw err;
    }
    // an unknown run, a run that is not a training run, a step without a checkpoint: 400 naming the field
    const ckpt = checkpointToEvaluate(body.config, source, source ? listCheckpoints(source.id) : [], "body.config");
    // "the latest" is pinned at launch, so the run says which checkpoint it evaluated
    const config = { ...body.config, checkpointStep: ckpt.step };
    return {
      run: {
        name: body.name ?? `checkpoint-eval-${source!.name}-step${ckpt.step}`,
        kind: "eval",
        config,
        envId: source!.envId,
        estimator: null,
        seed: body.config.seed,
        parentRunId: body.parentRunId ?? source!.id,
      },
      payload: config,
    };
  },
  trainer: (body) => {
    // the operator's template and the params checked against it; the worker builds the command again from its own file
    const t = resolveTrainer(body.config, "body.config");
    return {
      run: {
        name: body.name ?? `${t.id}-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-")}`,
        kind: "train",
        // what the run page shows: the template, the params as resolved, and the argv they make
        config: { template: t.id, params: t.params, title: t.template.title, argv: t.argv, ray: t.template.ray, gpus: t.template.gpus },
        envId: "external",
        estimator: null,
        seed: 0,
        parentRunId: body.parentRunId,
      },
      payload: { template: t.id, params: t.params },
    };
  },
};

/**
 * Creates the run and queues its job: the kind must be launchable in the job-kind registry; its
 * maxAttempts and default timeout come from there, priority and an explicit timeout from the launch.
 */
export async function launchRun(body: LaunchRun): Promise<{ runId: string; jobId: string | null }> {
  const { run, job } = prepareLaunch(body);
  return createRunWithJob(run, job);
}

/**
 * The run a launch body makes and the job that produces it, validated against the job-kind
 * registry and the kind's own registries (environments, estimators, source runs); writes nothing.
 */
export function prepareLaunch(body: LaunchRun): { run: NewRun; job: Omit<EnqueueInput, "runId"> } {
  const spec = getJobKind(body.jobKind);
  if (!spec?.launchable) {
    const known = launchableKinds()
      .map((k) => k.id)
      .join(", ");
    throw new LaunchConfigError(`body.jobKind: "${body.jobKind}" cannot be launched (known: ${known})`, [
      { path: "body.jobKind", message: `not a launchable job kind; known: ${known}` },
    ]);
  }
  const { run, payload } = (prepare[body.jobKind] as (b: LaunchRun) => Prepared)(body);
  return {
    run: { ...run, project: body.project, tags: body.tags, notes: body.notes, jobKind: spec.id },
    job: {
      kind: spec.id,
      payload: payload as EnqueueInput["payload"],
      priority: body.priority,
      ...(body.timeoutMs !== undefined ? { timeoutMs: body.timeoutMs } : {}),
    },
  };
}

/** Parses estimator params with the estimator's registry schema, naming the offending field under `root`. */
export function parseEstimatorParams(estimator: string, params: unknown, root: string): Record<string, unknown> {
  return parseWithRegistry(
    "estimator",
    estimator,
    ESTIMATOR_IDS,
    (id) => getEstimator(id).paramsSchema,
    params,
    root,
    "estimator",
    "estimatorParams",
    "params",
  );
}

/**
 * A run and the queued job that produces it, in one transaction (lib/db stores the run, lib/jobs
 * the job; neither imports the other).
 */
export function createRunWithJob(input: NewRun, job: Omit<EnqueueInput, "runId">): { runId: string; jobId: string } {
  return writeTransaction(null, (db) => {
    const { runId } = createRun(input, db);
    // the queue's one enqueue implementation, inside this transaction
    return { runId, jobId: enqueueInTransaction(db, { ...job, runId }) };
  });
}

/** A run from an external trainer: no job; it streams metrics and rollouts through the ingest API. */
export async function importRun(body: ImportRun): Promise<{ runId: string; jobId: string | null }> {
  return { ...createRun(importedRun(body)), jobId: null };
}
