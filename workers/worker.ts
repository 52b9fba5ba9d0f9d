// TurnLens job worker: claims jobs from the database queue (lib/jobs) and runs them.
//
//   node --import tsx workers/worker.ts [--concurrency N] [--kinds a,b] [--job ID]
//   (or `npx tsx workers/worker.ts`; prefer the first under a process manager: it is one process,
//   so signals reach the worker itself)
//
// Any number of workers on any number of machines may share one database: they coordinate only
// through it (compare-and-swap claims, fenced writes, lease expiry). Settings: lib/jobs/README.md.
//
// Each job's runner runs in a job process of its own (workers/job-process.ts, forked detached so it
// leads a process group). This process only supervises: it holds the lease (heartbeat), sees cancel
// requests, enforces the job's timeout, and writes the outcome. A stop is a message to the job
// process (its ctx.signal aborts); if it has not exited after the grace period, its whole process
// group is SIGKILLed. No runner, however busy, can starve the heartbeat.
//
// With TURNLENS_RAY_ADDRESS set, train jobs run as Ray jobs instead of local job processes
// (workers/ray): same lease, stop requests and outcome; the Ray job writes under this lease.
//
// Shutdown (SIGTERM / SIGINT): stop claiming, stop every running job, give the runners
// TURNLENS_WORKER_SHUTDOWN_GRACE_MS to return (heartbeats continue meanwhile), kill the ones that did
// not, then put their jobs back in the queue without counting the attempt, and exit 0. A job is never
// left running; another worker picks it up and the runner resumes from its last fenced write. A
// second signal skips the grace.
import { fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { LeaseLostError } from "../lib/db/raw";
import { assertStoreServable, projectRoot } from "../lib/db/url";
import { retryDelayMs, workerConfig, type WorkerConfig } from "../lib/jobs/config";
import { detectGpus, GpuPool } from "../lib/jobs/gpus";
import { JobLogBuffer, type LogLevel } from "../lib/jobs/logs";
import { claim, finish, getJob, heartbeat, progress, reapExpired, release, type ClaimedJob } from "../lib/jobs/queue";
import { getJobKind, jobKindIds } from "../lib/jobs/kinds";
import { gpusWanted } from "../lib/jobs/trainers";
import type { FinishOutcome } from "../lib/jobs/schemas";
import type { FromJobProcess, JobResultMessage, ToJobProcess } from "./job-process";
import { rayConfig, type RayConfig } from "./ray/config";
import { runOnRay } from "./ray/supervise";

type StopReason = "cancel" | "shutdown" | "lease_lost" | "timeout";

const JOB_PROCESS = fileURLToPath(new URL("./job-process.ts", import.meta.url));
// The job process needs the same TypeScript loader as this one (tsx); `--import tsx` if none is visible.
const JOB_EXEC_ARGV = process.execArgv.some((a) => a.includes("tsx")) ? process.execArgv : [...process.execArgv, "--import", "tsx"];

const STOP_TEXT: Record<StopReason, string> = {
  cancel: "job canceled",
  shutdown: "job stopped: worker shutting down",
  lease_lost: "job lease lost",
  timeout: "job timed out",
};

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

interface ActiveJob {
  job: ClaimedJob;
  /** the job process, once forked */
  child: ChildProcess | null;
  reason: StopReason | null;
  /** resolves with the reason on the first stop request */
  stopped: Promise<StopReason>;
  resolveStopped: (r: StopReason) => void;
  /** true once the outcome is being written: a failing heartbeat no longer matters */
  settling: boolean;
  done?: Promise<void>;
}

/**
 * How the job process ended: with its runner's result, or without one (crashed, or killed by this
 * worker after a stop request's grace period: `killed`).
 */
type Settled =
  | { kind: "ok"; value: unknown }
  | { kind: "error"; message: string; stack: string | null; retryable: boolean }
  | { kind: "died"; code: number | null; signal: NodeJS.Signals | null; killed: boolean };

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** SIGKILLs a job process's group (it leads one: forked detached), so its own children die too. */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

class Worker {
  readonly id = `${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly active = new Map<string, ActiveJob>();
  private stopping = false;
  private wakeUp: (() => void) | null = null;
  private nextReapAt = 0;
  private forceStop!: () => void;
  /** resolves on a second shutdown signal: stop waiting for runners */
  private readonly forced = new Promise<void>((r) => (this.forceStop = r));

  /** GPUs handed to running jobs, one each (train jobs run their engine there); none: CPU */
  private readonly gpus = new GpuPool(detectGpus());
  /** job processes alive, killed if this process exits unexpectedly */
  readonly children = new Set<ChildProcess>();
  /** a job process started in advance, waiting for its job (hides the ~0.5-1 s start) */
  private spare: ChildProcess | null = null;

  constructor(
    private readonly cfg: WorkerConfig,
    /** TURNLENS_RAY_ADDRESS set: train jobs run as Ray jobs (workers/ray), the rest here */
    private readonly ray: RayConfig | null = null,
  ) {}

  say(msg: string): void {
    process.stdout.write(`[worker ${this.id}] ${msg}\n`);
  }

  async run(): Promise<void> {
    const c = this.cfg;
    this.say(
      `started: concurrency ${c.concurrency}, kinds ${c.kinds.length ? c.kinds.join(",") : `all (runners: ${jobKindIds().join(", ")})`}, ` +
        `lease ${c.leaseMs} ms, heartbeat ${c.heartbeatMs} ms, poll ${c.pollMs} ms, ${this.gpus.size ? `${this.gpus.size} GPU(s)` : "no GPU: CPU"}` +
        (this.ray ? `; train jobs on the Ray cluster at ${this.ray.address}` : ""),
    );
    if (!c.job) this.spare = this.forkJobProcess();
    while (!this.stopping) {
      await this.maybeReap();
      let claimed = false;
      while (!this.stopping && this.active.size < c.concurrency) {
        let job: ClaimedJob | null;
        try {
          job = await claim(this.id, c.kinds, { leaseMs: c.leaseMs, jobId: c.job, excludeKinds: this.kindsAtLimit() });
        } catch (e) {
          this.say(`claim failed: ${errorText(e)}`);
          break;
        }
        if (!job) break;
        claimed = true;
        this.start(job);
      }
      if (this.stopping) break;
      // --job ID: exit once that job has ended (it may come back queued after a retryable error).
      if (c.job && this.active.size === 0 && (await getJob(c.job)).status !== "queued") break;
      // Claim again at once after a success while slots are free; otherwise wait a jittered poll
      // period (or until a job ends and frees a slot).
      if (!claimed || this.active.size >= c.concurrency) await this.idle(c.pollMs * (1 + Math.random() * 0.5));
    }
    this.dropSpare();
    await Promise.all([...this.active.values()].map((a) => a.done));
  }

  private forkJobProcess(): ChildProcess {
    const child = fork(JOB_PROCESS, [], { execArgv: JOB_EXEC_ARGV, detached: true, stdio: ["ignore", "pipe", "pipe", "ipc"] });
    this.children.add(child);
    child.once("exit", () => {
      if (this.spare !== child) return; // a job's process: runRunner handles its end
      this.spare = null;
      this.children.delete(child);
    });
    child.once("error", () => undefined); // a failed fork: runRunner reports it; a spare is dropped on exit
    return child;
  }

  /** The spare job process if it is alive, else a new one; then starts the next spare. */
  private takeJobProcess(): ChildProcess {
    const s = this.spare;
    this.spare = null;
    const child = s?.connected && s.exitCode === null && s.signalCode === null ? s : this.forkJobProcess();
    if (s && s !== child) this.children.delete(s);
    // one spare while claiming goes on; none for a single headless job (--job)
    if (!this.stopping && !this.cfg.job) this.spare = this.forkJobProcess();
    return child;
  }

  private dropSpare(): void {
    const s = this.spare;
    this.spare = null;
    if (s) {
      killGroup(s);
      this.children.delete(s);
    }
  }

  /** Kinds this worker already runs as many jobs of as the registry's concurrency allows. */
  private kindsAtLimit(): string[] {
    const running = new Map<string, number>();
    for (const a of this.active.values()) running.set(a.job.kind, (running.get(a.job.kind) ?? 0) + 1);
    // The kind's limit is about this machine's cores and GPUs; train jobs on Ray use the cluster's (only --concurrency bounds them).
    const limit = (kind: string) => (this.ray && kind === "train" ? Infinity : (getJobKind(kind)?.concurrency ?? Infinity));
    return [...running].filter(([kind, n]) => n >= limit(kind)).map(([kind]) => kind);
  }

  /** First signal: graceful; second: stop waiting for runners. */
  shutdown(signal: string): void {
    if (this.stopping) {
      this.say(`${signal} again: not waiting for runners any longer`);
      this.forceStop();
      return;
    }
    this.stopping = true;
    this.say(`${signal}: no new claims; stopping ${this.active.size} running job(s), re-queueing them after at most ${this.cfg.shutdownGraceMs} ms`);
    this.dropSpare();
    for (const a of this.active.values()) this.stop(a, "shutdown");
    this.wakeUp?.();
  }

  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(t);
        self.wakeUp = null;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async maybeReap(): Promise<void> {
    if (Date.now() < this.nextReapAt) return;
    this.nextReapAt = Date.now() + this.cfg.reapMs * (0.75 + Math.random() * 0.5);
    try {
      const r = await reapExpired({ backoffMs: this.cfg.retryBackoffMs });
      for (const id of r.requeued) this.say(`reaped ${id}: lease expired, re-queued`);
      for (const id of r.failed) this.say(`reaped ${id}: lease expired, no attempts left, failed`);
      for (const id of r.canceled) this.say(`reaped ${id}: lease expired with a cancel pending, canceled`);
    } catch (e) {
      this.say(`reap failed: ${errorText(e)}`);
    }
  }

  private start(job: ClaimedJob): void {
    let resolveStopped!: (r: StopReason) => void;
    const stopped = new Promise<StopReason>((r) => (resolveStopped = r));
    const a: ActiveJob = { job, child: null, reason: null, stopped, resolveStopped, settling: false };
    this.active.set(job.id, a);
    a.done = this.execute(a)
      .catch((e) => this.say(`job ${job.id}: worker error: ${e instanceof Error ? e.stack : e}`))
      .finally(() => {
        this.active.delete(job.id);
        this.wakeUp?.();
      });
    if (this.stopping) this.stop(a, "shutdown");
  }

  /** Asks the job process to stop (its ctx.signal aborts); runRunner kills it after the grace period. */
  private stop(a: ActiveJob, reason: StopReason): void {
    if (a.reason || a.settling) return; // the first reason decides; a settled runner's outcome stands
    a.reason = reason;
    if (a.child?.connected) a.child.send({ type: "stop", reason: STOP_TEXT[reason] } satisfies ToJobProcess, () => undefined);
    a.resolveStopped(reason);
  }

  private graceMs(reason: StopReason): number {
    return reason === "cancel" || reason === "timeout" ? this.cfg.cancelGraceMs : reason === "shutdown" ? this.cfg.shutdownGraceMs : 0;
  }

  private async execute(a: ActiveJob): Promise<void> {
    const { job } = a;
    const out = (level: LogLevel, line: string) => process.stdout.write(`[${job.id}] ${level === "info" ? "" : level.toUpperCase() + " "}${line}\n`);
    const logger = new JobLogBuffer(job.id, { echo: out });
    logger.log(`claimed by ${this.id}: ${job.kind}, attempt ${job.attempts}/${job.maxAttempts}${job.timeoutMs ? `, timeout ${seconds(job.timeoutMs)}` : ""}`);
    const stopBeating = this.startHeartbeat(a, logger);
    const timer = job.timeoutMs
      ? setTimeout(() => {
          if (a.reason || a.settling) return;
          logger.log(`timed out after ${seconds(job.timeoutMs!)}: stopping the runner`, "warn");
          this.stop(a, "timeout");
        }, job.timeoutMs)
      : undefined;
    try {
      if (!getJobKind(job.kind)) {
        a.settling = true;
        const error = `unknown job kind "${job.kind}"; this worker runs: ${jobKindIds().join(", ") || "nothing"}`;
        await this.finishJob(a, { status: "failed", error }, logger);
        return;
      }
      // The one place where local and Ray execution part: the same lease, stop requests and outcome either way.
      const settled =
        this.ray && job.kind === "train"
          ? await runOnRay({
              job,
              cfg: this.ray,
              log: (l, level) => logger.log(l, level),
              workerId: this.id,
              stopped: a.stopped.then((r) => ({ graceMs: this.graceMs(r) })),
              forced: this.forced,
            })
          : await this.runRunner(a, logger);
      a.settling = true;
      await this.settle(a, settled, logger);
    } finally {
      clearTimeout(timer);
      stopBeating();
      await logger.flush();
    }
  }

  /**
   * Runs the job's runner in a job process until that process exits. After a stop request the
   * process gets the reason's grace period to return, then its process group is SIGKILLed; either
   * way this resolves only once it is gone, so nothing it does can follow the outcome written next.
   */
  private async runRunner(a: ActiveJob, logger: JobLogBuffer): Promise<Settled> {
    const { job } = a;
    const gpu = this.gpus.acquire(job.id, gpusWanted(job));
    if (gpu !== null) logger.log(`assigned GPU ${gpu} (CUDA_VISIBLE_DEVICES=${gpu})`);
    const child = this.takeJobProcess();
    a.child = child;
    logger.log(`runner in job process ${child.pid} (process group ${child.pid})`);
    // What the runner (or a crash) prints goes to the job log too.
    createInterface({ input: child.stdout! }).on("line", (l) => logger.log(l));
    createInterface({ input: child.stderr! }).on("line", (l) => logger.log(l, "warn"));

    let result: JobResultMessage | null = null;
    const reply = (m: ToJobProcess) => {
      if (child.connected) child.send(m, () => undefined);
    };
    child.on("message", (m: FromJobProcess) => {
      if (m.type === "log") logger.log(m.line, m.level);
      else if (m.type === "result") result = m;
      else if (m.type === "progress") {
        progress(job.id, job.leaseToken, m.fraction, m.message).then(
          (ok) =>
            reply(ok ? { type: "progress-ack", id: m.id, ok: true } : { type: "progress-ack", id: m.id, ok: false, leaseLost: true, error: "lease lost" }),
          (e) => reply({ type: "progress-ack", id: m.id, ok: false, leaseLost: false, error: errorText(e) }),
        );
      }
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
      child.once("error", (e) => {
        logger.log(`job process: ${errorText(e)}`, "error");
        if (child.exitCode === null && child.signalCode === null && child.pid === undefined) resolve({ code: null, signal: null }); // never started
      });
    });
    const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
    reply({
      type: "start",
      job: { id: job.id, kind: job.kind, payload: job.payload, runId: job.runId, attempts: job.attempts },
      fence: job.fence,
      gpu,
    });
    if (a.reason) reply({ type: "stop", reason: STOP_TEXT[a.reason] }); // stopped before the fork

    // Kill escalation: a stop request, then the grace period, then SIGKILL of the whole group.
    let killed = false;
    void a.stopped.then(async (reason) => {
      const ms = this.graceMs(reason);
      const first = await Promise.race([
        exited.then(() => "exited" as const),
        new Promise<"grace">((r) => setTimeout(() => r("grace"), ms)),
        this.forced.then(() => "forced" as const),
      ]);
      if (first === "exited") return;
      killed = true;
      logger.log(
        first === "forced"
          ? "second signal: killing the job process"
          : `runner did not stop within ${ms} ms of the ${reason} request: killing its process group`,
        "warn",
      );
      killGroup(child);
    });

    const exit = await exited;
    killGroup(child); // whatever the runner started and left behind
    // 'close' comes once its stdio and IPC channel are drained: the result and the last log lines are in.
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2_000))]);
    this.children.delete(child);
    this.gpus.release(job.id);
    const r = result as JobResultMessage | null;
    if (r?.ok) return { kind: "ok", value: r.value };
    if (r) return { kind: "error", message: r.message, stack: r.stack, retryable: r.retryable };
    return { kind: "died", ...exit, killed };
  }

  /** Writes the outcome: finished, re-queued or nothing (lease lost). */
  private async settle(a: ActiveJob, s: Settled, logger: JobLogBuffer): Promise<void> {
    const { job } = a;
    const reason = a.reason;
    if (s.kind === "error" && !reason) logger.log(`runner failed: ${s.stack ?? s.message}`, "error");
    if (reason === "lease_lost") {
      logger.log("lease lost (finished, canceled or taken over elsewhere): outcome discarded", "warn");
      return;
    }
    const killed = s.kind === "died" && s.killed;
    if (reason === "cancel") {
      await this.finishJob(a, { status: "canceled", ...(killed ? { error: "canceled; the runner did not stop in time and was killed" } : {}) }, logger);
      return;
    }
    if (reason === "timeout") {
      await this.finishJob(a, { status: "failed", error: `timed out after ${seconds(job.timeoutMs!)}` }, logger);
      return;
    }
    if (reason === "shutdown") {
      const r = await this.retrying(() => release(job.id, job.leaseToken, { countAttempt: false, error: null }));
      logger.log(r ? `worker shutting down: job ${r === "queued" ? "re-queued (attempt not counted)" : r}` : "lease lost before re-queue", r ? "info" : "warn");
      return;
    }
    if (s.kind === "ok") {
      await this.finishJob(a, { status: "succeeded", result: s.value as FinishOutcome["result"] }, logger);
      return;
    }
    if (s.kind === "died") {
      const how = s.signal ? `was killed by ${s.signal}` : `exited with code ${s.code}`;
      await this.finishJob(a, { status: "failed", error: `job process ${how} before its runner returned` }, logger);
      return;
    }
    if (s.retryable) {
      const delayMs = retryDelayMs(job.attempts, this.cfg.retryBackoffMs);
      const r = await this.retrying(() => release(job.id, job.leaseToken, { countAttempt: true, delayMs, error: s.message }));
      logger.log(
        r === "queued"
          ? `retryable failure: re-queued, retry in ${delayMs} ms`
          : r
            ? `retryable failure: ${r} (attempt ${job.attempts}/${job.maxAttempts})`
            : "lease lost before re-queue",
        r === "queued" ? "warn" : "error",
      );
      return;
    }
    await this.finishJob(a, { status: "failed", error: s.message }, logger);
  }

  private async finishJob(a: ActiveJob, outcome: FinishOutcome, logger: JobLogBuffer): Promise<void> {
    // The log up to here is stored before the outcome: whoever sees `failed` can read why.
    await logger.flush();
    const ok = await this.retrying(() => finish(a.job.id, a.job.leaseToken, outcome));
    if (ok) logger.log(`${outcome.status}${outcome.error ? `: ${outcome.error}` : ""}`, outcome.status === "failed" ? "error" : "info");
    else logger.log(`lease lost before finishing (${outcome.status} discarded)`, "warn");
  }

  /** A few tries against transient database errors (a busy file); a lost lease is an answer, not an error. */
  private async retrying<T>(fn: () => Promise<T>): Promise<T> {
    for (let i = 0; ; i++) {
      try {
        return await fn();
      } catch (e) {
        if (i >= 3) throw e;
        this.say(`database write failed (${errorText(e)}), retrying`);
        await new Promise((r) => setTimeout(r, 200 * 2 ** i));
      }
    }
  }

  /** Renews the lease every heartbeatMs; turns a cancel request or a lost lease into a stop. */
  private startHeartbeat(a: ActiveJob, logger: JobLogBuffer): () => void {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const beat = async () => {
      try {
        const cancel = await heartbeat(a.job.id, a.job.leaseToken, { leaseMs: this.cfg.leaseMs });
        if (cancel && !a.reason) {
          logger.log("cancel requested: stopping the runner");
          this.stop(a, "cancel");
        }
      } catch (e) {
        if (stopped || a.settling) return;
        if (e instanceof LeaseLostError) {
          logger.log(e.message, "warn");
          this.stop(a, "lease_lost");
          return; // nothing left to renew
        }
        logger.log(`heartbeat failed: ${errorText(e)}`, "warn");
      }
      if (!stopped) timer = setTimeout(beat, this.cfg.heartbeatMs);
    };
    timer = setTimeout(beat, this.cfg.heartbeatMs);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }
}

let cfg: WorkerConfig;
let ray: RayConfig | null;
try {
  assertStoreServable(); // refuse at start, not at the first claim
  cfg = workerConfig(process.env, process.argv.slice(2));
  ray = rayConfig(process.env, { root: projectRoot(), node: process.execPath });
} catch (e) {
  process.stderr.write(`${errorText(e)}\n`);
  process.exit(2);
}
const worker = new Worker(cfg, ray);
process.on("SIGTERM", () => worker.shutdown("SIGTERM"));
process.on("SIGINT", () => worker.shutdown("SIGINT"));
process.on("unhandledRejection", (e) => worker.say(`unhandled rejection: ${e instanceof Error ? e.stack : String(e)}`));
// However this process ends, no job process outlives it (they also watch for their parent's death).
process.on("exit", () => {
  for (const c of worker.children) killGroup(c);
});

await worker.run();
worker.say("stopped");
process.exit(0);
