// Runs a claimed job on a Ray cluster instead of a local job process (the worker's hook for
// `train` when TURNLENS_RAY_ADDRESS is set). The worker keeps the lease and heartbeats as for a
// local job; this module submits the entrypoint (workers/ray/entry.ts) through the Ray Jobs API,
// follows its status, copies its new log lines into the job log, stops it on the worker's stop
// request, and resubmits it (bounded) when it ends without a result: killed, stopped from outside
// TurnLens, lost with its node or its head. The runner resumes from its last checkpoint each time.
import { randomBytes } from "node:crypto";
import { databaseUrl } from "../../lib/db/url";
import type { LogLevel } from "../../lib/jobs/logs";
import type { ClaimedJob } from "../../lib/jobs/queue";
import { trainConfigSchema } from "../../lib/schemas/train";
import type { RayConfig } from "./config";
import { isTerminal, RayApiError, RayJobsClient, type RayJobStatus } from "./jobs-api";
import { parseLine, type EntryResult } from "./protocol";

/** How the Ray-backed job ended; the same shape as a local job process's outcome. */
export type RaySettled =
  | { kind: "ok"; value: unknown }
  | { kind: "error"; message: string; stack: string | null; retryable: boolean }
  | { kind: "died"; code: number | null; signal: NodeJS.Signals | null; killed: boolean };

export interface RayRunInput {
  job: ClaimedJob;
  cfg: RayConfig;
  log: (line: string, level?: LogLevel) => void;
  workerId: string;
  /** resolves on the worker's first stop request (cancel, timeout, shutdown, lost lease) with its grace period */
  stopped: Promise<{ graceMs: number }>;
  /** resolves on a second shutdown signal: stop waiting for the Ray job */
  forced: Promise<void>;
}

/** After the stop request's grace, how much longer Ray gets to report STOPPED (it SIGKILLs after RAY_JOB_STOP_WAIT_TIME_S, 3 s). */
const STOP_MARGIN_MS = 10_000;

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Entrypoint resources from the train config: its torch threads as CPUs, a GPU as its device asks. */
export function rayResources(payload: unknown, cfg: Pick<RayConfig, "autoGpus">): { entrypoint_num_cpus: number; entrypoint_num_gpus: number } {
  const c = trainConfigSchema.parse(payload);
  return { entrypoint_num_cpus: c.threads ?? 1, entrypoint_num_gpus: c.device === "cpu" ? 0 : c.device === "cuda" ? 1 : cfg.autoGpus };
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** How one Ray submission ended, as far as the worker could see. */
type Ending = { status: RayJobStatus; message: string | null; result: EntryResult | null } | { lost: string };

export async function runOnRay(input: RayRunInput): Promise<RaySettled> {
  const { job, cfg, log } = input;
  const api = new RayJobsClient(cfg.address);
  // set by the worker's stop request / second signal (callbacks: an object, so TypeScript does not narrow them away)
  const req: { stop: { graceMs: number } | null; forced: boolean } = { stop: null, forced: false };
  let wake: () => void = () => undefined;
  void input.stopped.then((s) => {
    req.stop = s;
    wake();
  });
  void input.forced.then(() => {
    req.forced = true;
    wake();
  });
  /** Sleeps `ms`, or less when a stop request comes. */
  const pause = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wake = () => undefined;
        r();
      }
      wake = done;
    });
  const redact = (line: string) => line.replaceAll(job.leaseToken, "<lease token>");

  let resources: ReturnType<typeof rayResources>;
  try {
    resources = rayResources(job.payload, cfg);
  } catch (e) {
    return { kind: "error", message: `train config: ${errorText(e)}`, stack: null, retryable: false };
  }
  const entrypoint = [
    `cd ${shellQuote(cfg.root)} &&`,
    `exec ${shellQuote(cfg.node)} --import tsx workers/ray/entry.ts --job ${shellQuote(job.id)} --fence ${shellQuote(job.leaseToken)}`,
  ].join(" ");
  const envVars: Record<string, string> = { DATABASE_URL: databaseUrl(), TURNLENS_ROOT: cfg.root };
  for (const k of ["TURNLENS_PYTHON", "TURNLENS_CHECK_RESPONSES"]) if (process.env[k]) envVars[k] = process.env[k]!;

  await stopLeftovers();

  for (let n = 0; ; n++) {
    if (req.stop) return { kind: "died", code: null, signal: null, killed: false };
    const id = `turnlens-${job.id}-${job.attempts}-${n}-${randomBytes(3).toString("hex")}`;
    const refused = await submit(id);
    if (refused && (req.stop || req.forced)) return { kind: "died", code: null, signal: null, killed: false };
    // submitted: even if a stop came meanwhile, follow() asks Ray to stop it
    if (refused)
      return { kind: "error", message: `Ray job could not be submitted to ${cfg.address}: ${refused.message}`, stack: null, retryable: refused.retryable };
    log(
      `submitted Ray job ${id} to ${cfg.address} (entrypoint_num_cpus ${resources.entrypoint_num_cpus}, entrypoint_num_gpus ${resources.entrypoint_num_gpus})` +
        (n ? `: resubmission ${n}/${cfg.resubmits}` : ""),
    );
    const end = await follow(id);
    if (req.stop || req.forced) return { kind: "died", code: null, signal: null, killed: "lost" in end };
    if ("status" in end && end.result) {
      const r = end.result;
      return r.ok ? { kind: "ok", value: r.value } : { kind: "error", message: r.message, stack: r.stack, retryable: r.retryable };
    }
    const why = "lost" in end ? end.lost : `ended ${end.status} without a result${end.message ? ` (${end.message.split("\n")[0].slice(0, 300)})` : ""}`;
    if ("lost" in end) await api.stop(id).catch(() => undefined); // in case it still runs where we cannot see it
    if (n >= cfg.resubmits) return { kind: "error", message: `Ray job ${id} ${why}; gave up after ${n} resubmission(s)`, stack: null, retryable: false };
    log(`Ray job ${id} ${why}: resubmitting; the runner resumes from the last checkpoint (${n + 1}/${cfg.resubmits})`, "warn");
  }

  /**
   * Submits `id`, retrying while the head cannot be reached. A retry reuses the submission id and
   * first asks whether Ray has it already (a POST whose answer was lost may have been accepted):
   * Ray runs one job per submission id, so a retry can never start a second runner on this lease.
   * Returns null once Ray has the job, else why not.
   */
  async function submit(id: string): Promise<{ message: string; retryable: boolean } | null> {
    const t0 = Date.now();
    for (let tries = 1; ; tries++) {
      try {
        await api.submit({
          entrypoint,
          submission_id: id,
          runtime_env: { env_vars: envVars },
          metadata: { turnlens_job: job.id, ...(job.runId ? { turnlens_run: job.runId } : {}), turnlens_worker: input.workerId },
          ...resources,
        });
        return null;
      } catch (e) {
        if (await api.details(id).then(Boolean, () => false)) return null;
        const unreachable = e instanceof RayApiError && (e.status === null || e.status >= 500);
        if (!unreachable || Date.now() - t0 > cfg.unreachableMs || req.stop || req.forced) return { message: errorText(e), retryable: unreachable };
        if (tries === 1) log(`Ray submission of ${id} failed (${errorText(e)}); retrying it for up to ${cfg.unreachableMs / 1000} s`, "warn");
        await pause(cfg.pollMs * 2);
      }
    }
  }

  /** Follows one submission to its end: status, log lines, our stop request. */
  async function follow(id: string): Promise<Ending> {
    let consumed = 0;
    let partial = "";
    let result: EntryResult | null = null;
    const pump = async (final: boolean) => {
      const text = await api.logs(id);
      const fresh = partial + text.slice(consumed);
      consumed = Math.max(consumed, text.length);
      const lines = fresh.split("\n");
      partial = final ? "" : lines.pop()!;
      if (final && lines.at(-1) === "") lines.pop();
      for (const raw of lines) {
        let p: ReturnType<typeof parseLine>;
        try {
          p = parseLine(raw);
        } catch (e) {
          log(`unreadable result line from the Ray job: ${errorText(e)}`, "error");
          continue;
        }
        if ("result" in p) result = p.result;
        else log(redact(p.line), p.level);
      }
    };
    let stopSentAt: number | null = null;
    let failingSince: number | null = null;
    for (;;) {
      if (req.stop && stopSentAt === null) {
        stopSentAt = Date.now();
        try {
          await api.stop(id);
          log(`asked Ray to stop job ${id}`);
        } catch (e) {
          log(`could not ask Ray to stop job ${id}: ${errorText(e)}`, "warn");
        }
      }
      if (req.forced) return { lost: "not waited for (second shutdown signal)" };
      try {
        const d = await api.details(id);
        await pump(false);
        failingSince = null;
        if (d === null) return { lost: "is unknown to the Ray cluster (its head was restarted?)" };
        if (isTerminal(d.status)) {
          await pump(true);
          if (stopSentAt !== null) log(`Ray job ${id}: ${d.status} ${((Date.now() - stopSentAt) / 1000).toFixed(1)} s after the stop request`);
          return { status: d.status, message: d.message ?? null, result };
        }
      } catch (e) {
        if (!(e instanceof RayApiError)) throw e;
        if (failingSince === null) log(`${errorText(e)}; retrying for up to ${cfg.unreachableMs / 1000} s`, "warn");
        failingSince ??= Date.now();
        if (Date.now() - failingSince > cfg.unreachableMs) return { lost: `could not be followed: ${errorText(e)}` };
      }
      if (req.stop && stopSentAt !== null && Date.now() - stopSentAt > req.stop.graceMs + STOP_MARGIN_MS) {
        log(
          `Ray job ${id} still not stopped ${((Date.now() - stopSentAt) / 1000).toFixed(1)} s after the stop request; not waiting longer (its writes are fenced by this lease)`,
          "warn",
        );
        return { lost: "did not stop in time" };
      }
      await pause(cfg.pollMs);
    }
  }

  /** Stops Ray jobs of this TurnLens job still running from an earlier claim (a lost worker's). */
  async function stopLeftovers(): Promise<void> {
    try {
      for (const d of await api.list()) {
        if (d.metadata?.turnlens_job !== job.id || isTerminal(d.status) || !d.submission_id) continue;
        await api.stop(d.submission_id);
        log(`stopped Ray job ${d.submission_id}, left running by an earlier attempt (${d.metadata.turnlens_worker ?? "unknown worker"})`, "warn");
      }
    } catch (e) {
      log(`could not list the Ray cluster's jobs: ${errorText(e)}`, "warn");
    }
  }
}
