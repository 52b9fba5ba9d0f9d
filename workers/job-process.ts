// One job's runner, in a process of its own. The worker (workers/worker.ts) forks this file per job
// and stays free to heartbeat the lease and enforce cancel requests and timeouts, whatever the
// runner does: a runner that never yields can starve only this process, never the supervisor.
//
// The worker starts it detached, so it leads its own process group: killing the group (-pid) also
// takes down what the runner started (the train job's Python engine). The outcome stays with the
// worker; this process only runs the runner and reports over IPC:
//   worker -> job:  start {job, fence, gpu} | stop {reason} | progress-ack {id, ok, error?}
//   job -> worker:  log {line, level} | progress {id, fraction, message?} | result {ok, value | error}
// Result writes are the runner's own, fenced by its lease token (writeTransaction(ctx.fence, ...)).
//
// If the worker dies (SIGKILL, crash), this process must not outlive it: the IPC channel closes
// ("disconnect"), and for a runner that never yields a watchdog thread notices the new parent and
// SIGKILLs the group.
import { Worker as Thread } from "node:worker_threads";
import { LeaseLostError, type Fence } from "../lib/db/raw";
import { isRetryable } from "../lib/jobs/errors";
import { loadRunner } from "./runners/index";
import type { JobContext } from "./runners/types";

export type ToJobProcess =
  | { type: "start"; job: JobContext["job"]; fence: Fence; gpu: string | null }
  | { type: "stop"; reason: string }
  | { type: "progress-ack"; id: number; ok: true }
  | { type: "progress-ack"; id: number; ok: false; leaseLost: boolean; error: string };

export type JobResultMessage =
  | { type: "result"; ok: true; value: unknown }
  | { type: "result"; ok: false; message: string; stack: string | null; retryable: boolean };

export type FromJobProcess =
  | { type: "log"; line: string; level: "info" | "warn" | "error" }
  | { type: "progress"; id: number; fraction: number; message?: string }
  | JobResultMessage;

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** SIGKILLs this process's group (itself and whatever the runner started). */
function killGroup(): never {
  try {
    process.kill(-process.pid, "SIGKILL");
  } catch {
    // not a group leader (started without detached): at least this process
  }
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
}

function send(msg: FromJobProcess, then?: () => void): void {
  if (!process.connected) return;
  process.send!(msg, undefined, undefined, then ? () => then() : undefined);
}

if (!process.send) {
  process.stderr.write("workers/job-process.ts is started by the worker (workers/worker.ts), not by hand\n");
  process.exit(2);
}

// The watchdog thread runs even while the runner blocks this thread.
const watchdog = new Thread(
  `const { workerData: w } = require("node:worker_threads");
   setInterval(() => {
     let gone = process.ppid !== w.parent;
     if (!gone) try { process.kill(w.parent, 0); } catch { gone = true; }
     if (!gone) return;
     try { process.kill(-w.self, "SIGKILL"); } catch {}
     process.kill(w.self, "SIGKILL");
   }, 250);`,
  { eval: true, workerData: { parent: process.ppid, self: process.pid } },
);
watchdog.unref();
process.on("disconnect", () => killGroup());

const controller = new AbortController();
let nextProgressId = 1;
const pendingProgress = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
let started = false;

process.on("message", (m: ToJobProcess) => {
  if (m.type === "start" && !started) {
    started = true;
    void run(m);
  } else if (m.type === "stop") {
    if (!controller.signal.aborted) controller.abort(new Error(m.reason));
  } else if (m.type === "progress-ack") {
    const p = pendingProgress.get(m.id);
    pendingProgress.delete(m.id);
    if (!p) return;
    if (m.ok) p.resolve();
    else p.reject(m.leaseLost ? new LeaseLostError(jobId) : new Error(m.error));
  }
});
// An abandoned promise of the runner may reject late: report it, do not crash the job.
process.on("unhandledRejection", (e) => send({ type: "log", line: `unhandled rejection: ${e instanceof Error ? e.stack : String(e)}`, level: "warn" }));

let jobId = "";

async function run(m: Extract<ToJobProcess, { type: "start" }>): Promise<void> {
  jobId = m.job.id;
  let out: JobResultMessage;
  try {
    const runner = await loadRunner(m.job.kind);
    if (!runner) throw new Error(`unknown job kind "${m.job.kind}"`);
    const ctx: JobContext = {
      job: m.job,
      fence: m.fence,
      gpu: m.gpu,
      signal: controller.signal,
      progress: (fraction, message) =>
        new Promise<void>((resolve, reject) => {
          if (!Number.isFinite(fraction) || fraction < 0 || fraction > 1) {
            reject(new RangeError(`progress fraction must be within [0, 1], got ${fraction}`));
            return;
          }
          const id = nextProgressId++;
          pendingProgress.set(id, { resolve, reject });
          send({ type: "progress", id, fraction, ...(message !== undefined ? { message } : {}) });
        }),
      log: (line, level = "info") => send({ type: "log", line: String(line), level }),
    };
    const value = await runner(ctx);
    out = jsonResult(value);
  } catch (e) {
    out = {
      type: "result",
      ok: false,
      message: errorText(e) || "runner failed",
      stack: e instanceof Error ? (e.stack ?? null) : null,
      retryable: isRetryable(e),
    };
  }
  // Exit once the result is handed over (whatever the runner left open must not keep the job alive).
  send(out, () => process.exit(0));
}

function jsonResult(value: unknown): JobResultMessage {
  if (value === undefined) return { type: "result", ok: true, value: undefined }; // no Job.result
  try {
    const s = JSON.stringify(value);
    return { type: "result", ok: true, value: s === undefined ? null : JSON.parse(s) };
  } catch (e) {
    return { type: "result", ok: false, message: `runner result is not JSON-serializable: ${errorText(e)}`, stack: null, retryable: false };
  }
}
