// `trainer`: the operator's own training command (a template of TURNLENS_TRAINERS, lib/jobs/trainers.ts)
// with the params the launch gave, checked again against this worker's own copy of the file.
//
// The process learns its run from the environment: TURNLENS_URL, TURNLENS_RUN_ID, TURNLENS_WRITE_KEY
// (minted here for this attempt, under the job's fence) and TURNLENS_PROJECT, so `turnlens.init()`
// and every integration built on it (verl logger, TRL callback, SkyRL, ...) write into this run
// over the ingest API instead of creating another. Its exit code decides the run's status.
//
// Local (the default): argv without a shell, in the job process's group, CUDA_VISIBLE_DEVICES from
// the worker's GPU; a stop sends SIGTERM, and the worker SIGKILLs the group after its cancel grace.
// `"ray": true`: submitted to the Ray cluster at TURNLENS_RAY_ADDRESS through the Jobs API
// (workers/ray/jobs-api.ts): the argv as the entrypoint, the environment as its runtime env, its log
// copied into the job log, a stop asks Ray to stop it.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeTransaction } from "../../lib/db/raw";
import { getRun } from "../../lib/db/runs";
import { issueWriteKey } from "../../lib/ingest/write-access";
import { resolveTrainer, type ResolvedTrainer } from "../../lib/jobs/trainers";
import { trainerLaunchConfigSchema } from "../../lib/schemas/trainers";
import { rayConfig } from "../ray/config";
import { isTerminal, RayJobsClient } from "../ray/jobs-api";
import { runChild } from "./child";
import type { JobContext, JobRunner } from "./types";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The trainer failed on its own (exit code, Ray status): the message is the whole story. */
class TrainerFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TrainerFailed";
    this.stack = message;
  }
}

const shellQuote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
/** The argv as one line a person can read (and paste): each element quoted where it needs it. */
export const argvText = (argv: string[]) => argv.map(shellQuote).join(" ");

export const trainer: JobRunner = async (ctx) => {
  const t = resolveTrainer(trainerLaunchConfigSchema.parse(ctx.job.payload), "payload");
  const runId = ctx.job.runId;
  if (!runId) throw new TrainerFailed("a trainer job needs its run (launch it with POST /runs)");
  const run = getRun(runId);
  // a new key each attempt: a process left from an earlier attempt can no longer write
  const writeKey = writeTransaction(ctx.fence, (db) => issueWriteKey(runId, db));
  const url = (process.env.TURNLENS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`).replace(/\/+$/, "");
  const own = { TURNLENS_URL: url, TURNLENS_RUN_ID: runId, TURNLENS_WRITE_KEY: writeKey, TURNLENS_PROJECT: run.project, PYTHONUNBUFFERED: "1" };
  ctx.log(`trainer ${t.id} (${t.template.title}): ${argvText(t.argv)}`);
  ctx.log(`  in ${t.cwd}${t.template.ray ? ", on Ray" : ""}; params ${JSON.stringify(t.params)}`);
  await ctx.progress(0.01, `${t.id} started`);
  const result = t.template.ray ? await onRay(ctx, t, { ...t.env, ...own }) : await locally(ctx, t, own);
  if (ctx.signal.aborted) return { stopped: true, ...result };
  await ctx.progress(1, `${t.id} finished`);
  return result;
};

async function locally(ctx: JobContext, t: ResolvedTrainer, own: Record<string, string>): Promise<Record<string, unknown>> {
  // the GPUs the worker gave it (lib/jobs/gpus.ts, as many as the template asks for and are free); gpus 0: none at all
  const cuda = t.template.gpus === 0 ? "" : (ctx.gpu ?? "");
  const got = cuda ? cuda.split(",").length : 0;
  if (got < t.template.gpus) ctx.log(`template asks for ${t.template.gpus} GPU(s); this worker gave ${got} (CUDA_VISIBLE_DEVICES=${cuda || "none"})`, "warn");
  const env: NodeJS.ProcessEnv = { ...process.env, ...t.env, ...own, CUDA_VISIBLE_DEVICES: cuda };
  delete env.TURNLENS_MODE; // the trainer writes online, to the server, whatever the worker's own mode
  const [command, ...args] = t.argv;
  const t0 = Date.now();
  const exit = await runChild(ctx, { command, args, cwd: t.cwd, env, stopSignal: "SIGTERM" }).catch((e: Error) => {
    throw new TrainerFailed(`could not start ${command} in ${t.cwd}: ${e.message}`);
  });
  const seconds = Math.round((Date.now() - t0) / 100) / 10;
  if (exit.stopped) {
    ctx.log(`trainer stopped (${exit.signal ?? `exit code ${exit.code}`}) after ${seconds} s`);
    return { exitCode: exit.code, signal: exit.signal, seconds };
  }
  if (exit.code !== 0)
    throw new TrainerFailed(
      `the trainer ${exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`} after ${seconds} s (its output: the job log)`,
    );
  ctx.log(`trainer exited with code 0 after ${seconds} s`);
  return { exitCode: 0, seconds };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((r) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      r();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

async function onRay(ctx: JobContext, t: ResolvedTrainer, envVars: Record<string, string>): Promise<Record<string, unknown>> {
  const cfg = rayConfig(process.env, { root: ROOT, node: process.execPath });
  if (!cfg) throw new TrainerFailed(`template ${t.id} runs on Ray ("ray": true), but this worker has no TURNLENS_RAY_ADDRESS (docs/ray.md)`);
  for (const k of ["TURNLENS_API_TOKEN"]) if (process.env[k]) envVars[k] = process.env[k]!;
  const api = new RayJobsClient(cfg.address);
  const id = `turnlens-${ctx.job.id}-${ctx.job.attempts}-${randomBytes(3).toString("hex")}`;
  // Ray runs the entrypoint with a shell: every element quoted, so a param stays one argument there too
  const entrypoint = `cd ${shellQuote(path.resolve(t.cwd))} && exec ${argvText(t.argv)}`;
  await api.submit({
    entrypoint,
    submission_id: id,
    runtime_env: { env_vars: envVars },
    metadata: { turnlens_job: ctx.job.id, turnlens_run: ctx.job.runId ?? "", turnlens_template: t.id },
    entrypoint_num_cpus: t.template.cpus,
    entrypoint_num_gpus: t.template.gpus,
  });
  ctx.log(`submitted Ray job ${id} to ${cfg.address} (entrypoint_num_cpus ${t.template.cpus}, entrypoint_num_gpus ${t.template.gpus})`);
  let consumed = 0;
  let partial = "";
  const pump = async (final: boolean) => {
    const text = await api.logs(id);
    const lines = (partial + text.slice(consumed)).split("\n");
    consumed = Math.max(consumed, text.length);
    partial = final ? "" : lines.pop()!;
    for (const l of lines) if (l || !final) ctx.log(l);
  };
  let stopAsked = false;
  for (;;) {
    if (ctx.signal.aborted && !stopAsked) {
      stopAsked = true;
      // the worker kills this process after its cancel grace: ask first, Ray SIGTERMs then SIGKILLs the entrypoint
      await api.stop(id).then(
        () => ctx.log(`asked Ray to stop job ${id}`),
        (e: Error) => ctx.log(`could not ask Ray to stop job ${id}: ${e.message}`, "warn"),
      );
      return { rayJob: id, stopRequested: true };
    }
    const d = await api.details(id);
    await pump(false);
    if (!d) throw new TrainerFailed(`Ray job ${id} is unknown to the cluster at ${cfg.address} (its head was restarted?)`);
    if (isTerminal(d.status)) {
      await pump(true);
      if (d.status === "SUCCEEDED") {
        ctx.log(`Ray job ${id} SUCCEEDED`);
        return { rayJob: id, exitCode: d.driver_exit_code ?? 0 };
      }
      throw new TrainerFailed(
        `Ray job ${id} ${d.status}${d.driver_exit_code != null ? ` (exit code ${d.driver_exit_code})` : ""}${d.message ? `: ${d.message.split("\n")[0].slice(0, 300)}` : ""}`,
      );
    }
    await sleep(cfg.pollMs, ctx.signal);
  }
}
