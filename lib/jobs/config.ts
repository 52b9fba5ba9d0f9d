// Timing of the job queue and the worker, from the environment (lib/jobs/README.md, "The worker").
// Production defaults; the integration tests shrink them to keep the suite fast.
import { z } from "zod";

const ms = (def: number, min: number) => z.coerce.number().int().min(min).default(def);

const WorkerConfigSchema = z
  .object({
    /** jobs run at once by one worker process */
    concurrency: z.coerce.number().int().min(1).max(64).default(1),
    /** run only this job, then exit (headless runs: `npm run train`) */
    job: z.string().min(1).nullable().default(null),
    /** only claim these kinds (empty: all registered kinds) */
    kinds: z.array(z.string().min(1)).default([]),
    /** a claim lasts this long without a heartbeat; after that any worker's reaper may take the job back */
    leaseMs: ms(10_000, 200),
    /** heartbeat period of each running job (also how often cancel requests are seen) */
    heartbeatMs: ms(1_000, 50),
    /** idle poll period (a random 0-50% jitter is added so workers do not poll in lock step) */
    pollMs: ms(500, 10),
    /** how often this worker reaps expired leases */
    reapMs: ms(5_000, 50),
    /** after a cancel or a timeout, how long the runner has to return before its job process group is killed */
    cancelGraceMs: ms(2_000, 0),
    /** on SIGTERM/SIGINT, how long stopped runners have to return before their job processes are killed and their jobs re-queued */
    shutdownGraceMs: ms(5_000, 0),
    /** back-off base of a re-queued job: base * 2^(attempts-1), capped at 5 minutes */
    retryBackoffMs: ms(2_000, 0),
  })
  .refine((c) => c.heartbeatMs * 2 <= c.leaseMs, {
    message: "TURNLENS_WORKER_HEARTBEAT_MS must be at most half of TURNLENS_JOB_LEASE_MS (a lease must survive a missed beat)",
  });

export type WorkerConfig = z.infer<typeof WorkerConfigSchema>;

type Env = Record<string, string | undefined>;

const blank = (v: string | undefined) => (v === undefined || v.trim() === "" ? undefined : v);

/** Lease length used by claim/heartbeat when the caller passes none. */
export function defaultLeaseMs(env: Env = process.env): number {
  return ms(10_000, 200).parse(blank(env.TURNLENS_JOB_LEASE_MS));
}

/** Back-off base used by reapExpired when the caller passes none. */
export function defaultRetryBackoffMs(env: Env = process.env): number {
  return ms(2_000, 0).parse(blank(env.TURNLENS_JOB_RETRY_BACKOFF_MS));
}

/** Delay before a re-queued job may run again: exponential in the attempts already made. */
export function retryDelayMs(attempts: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempts - 1), 5 * 60_000);
}

/**
 * Worker settings: command-line flags (`--concurrency N`, `--kinds a,b`) win over the environment,
 * which wins over the defaults. Throws a readable error on a bad value.
 */
export function workerConfig(env: Env = process.env, argv: string[] = []): WorkerConfig {
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`unexpected argument "${a}" (known: --concurrency N, --kinds a,b, --job ID)`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`missing value for --${m[1]}`);
    if (m[1] !== "concurrency" && m[1] !== "kinds" && m[1] !== "job") throw new Error(`unknown flag --${m[1]} (known: --concurrency, --kinds, --job)`);
    flags[m[1]] = value;
  }
  const kinds = flags.kinds ?? blank(env.TURNLENS_WORKER_KINDS);
  const parsed = WorkerConfigSchema.safeParse({
    concurrency: flags.concurrency ?? blank(env.TURNLENS_WORKER_CONCURRENCY),
    job: flags.job ?? null,
    kinds: kinds
      ? kinds
          .split(",")
          .map((k) => k.trim())
          .filter(Boolean)
      : undefined,
    leaseMs: blank(env.TURNLENS_JOB_LEASE_MS),
    heartbeatMs: blank(env.TURNLENS_WORKER_HEARTBEAT_MS),
    pollMs: blank(env.TURNLENS_WORKER_POLL_MS),
    reapMs: blank(env.TURNLENS_WORKER_REAP_MS),
    cancelGraceMs: blank(env.TURNLENS_WORKER_CANCEL_GRACE_MS),
    shutdownGraceMs: blank(env.TURNLENS_WORKER_SHUTDOWN_GRACE_MS),
    retryBackoffMs: blank(env.TURNLENS_JOB_RETRY_BACKOFF_MS),
  });
  if (!parsed.success) {
    throw new Error("invalid worker configuration: " + parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; "));
  }
  return parsed.data;
}
