// Shared fixtures of the worker tests: worker processes, runs, polling. (Temp databases: temp-db.ts.)
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { createRun } from "../../lib/db/runs";
import { deleteAllJobs, jobMarkRows } from "./db-inspect";
import { ROOT } from "./temp-db";

import { useTempDatabase } from "./temp-db";

export { useTempDatabase, ROOT } from "./temp-db";

/** A project and a run, for jobs that mirror their state onto a Run. */
export async function makeRun(name = "run"): Promise<string> {
  return createRun({ project: "jobs-test", name, kind: "train", jobKind: "selftest", config: {}, status: "queued" }).runId;
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => Promise<T> | T, timeoutMs = 20_000, everyMs = 50): Promise<NonNullable<T>> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Short leases and intervals so the integration tests run in seconds. */
export const FAST_ENV: Record<string, string> = {
  TURNLENS_JOB_LEASE_MS: "1500",
  TURNLENS_WORKER_HEARTBEAT_MS: "300",
  TURNLENS_WORKER_POLL_MS: "100",
  TURNLENS_WORKER_REAP_MS: "300",
  TURNLENS_WORKER_CANCEL_GRACE_MS: "1000",
  TURNLENS_WORKER_SHUTDOWN_GRACE_MS: "1000",
  TURNLENS_JOB_RETRY_BACKOFF_MS: "100",
};

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** everything it printed so far (stdout and stderr) */
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** resolves once the worker printed its start line */
  ready: Promise<void>;
}

const live = new Set<ChildProcess>();

/** Starts `node --import tsx workers/worker.ts` on the test database (one process: signals reach it directly). */
export function spawnWorker(env: Record<string, string> = {}, args: string[] = []): WorkerProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "workers/worker.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...FAST_ENV, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  let out = "";
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  const onData = (b: Buffer) => {
    out += b.toString();
    if (out.includes("] started:")) markReady();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      live.delete(child);
      markReady();
      resolve({ code, signal });
    }),
  );
  return { child, pid: child.pid!, output: () => out, exited, ready };
}

/** SIGKILLs every worker a test left running (by the pids this file started). */
export async function killAllWorkers(): Promise<void> {
  const waits = [...live].map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once("exit", r))));
  for (const c of live) c.kill("SIGKILL");
  await Promise.all(waits);
}

/** Selftest step markers of a job (JobLog rows with negative seq), in step order. */
/** `pid`: the job process that wrote the marker; `worker`: the worker that ran it. */
export function marksOf(jobId: string): { step: number; attempt: number; token: string; pid: number; worker: number; time: number }[] {
  return jobMarkRows(jobId).map((r) => ({
    ...(JSON.parse(r.line) as { step: number; attempt: number; token: string; pid: number; worker: number }),
    time: r.time,
  }));
}

/**
 * The life of a worker integration file: its own temp database, no job left over between
 * tests, no worker left running after a test or the file. Returns the database (for its dir).
 */
export function useWorkerSuite(name: string): () => ReturnType<typeof useTempDatabase> {
  let env: ReturnType<typeof useTempDatabase>;
  beforeAll(() => {
    env = useTempDatabase(name);
  });
  afterAll(async () => {
    await killAllWorkers();
    await env.cleanup();
  });
  beforeEach(async () => {
    deleteAllJobs();
  });
  afterEach(async () => {
    await killAllWorkers();
  });
  return () => env;
}

/** SIGTERM: each worker must shut down gracefully (exit code 0); its output is shown otherwise. */
export async function stopGracefully(workers: WorkerProcess | WorkerProcess[]): Promise<void> {
  const ws = Array.isArray(workers) ? workers : [workers];
  for (const w of ws) w.child.kill("SIGTERM");
  const exits = await Promise.all(ws.map((w) => w.exited));
  for (const [i, e] of exits.entries()) expect(e, ws[i].output()).toEqual({ code: 0, signal: null });
}
