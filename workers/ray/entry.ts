// The entrypoint of a TurnLens Ray job, run by Ray on a cluster node:
//
//   node --import tsx workers/ray/entry.ts --job ID --fence LEASE_TOKEN
//
// It runs the job's runner (the same one a local job process runs, from the registry) against the
// shared store, with the lease of the worker that submitted it: every result write stays fenced by
// that worker's lease (writeTransaction(ctx.fence, ...)), and progress is written under it too. The
// worker keeps the lease, follows this job through the Ray Jobs API and copies its log (stdout)
// into the job log; the last line is the runner's result (protocol.ts).
//
// Ray stops a job with SIGTERM to the entrypoint and its children (SIGKILL after
// RAY_JOB_STOP_WAIT_TIME_S): the signal aborts ctx.signal. A runner stopped that way has no result:
// this process then exits 143 without a result line, so the worker never mistakes it for success.
import os from "node:os";
import { LeaseLostError } from "../../lib/db/raw";
import { isRetryable } from "../../lib/jobs/errors";
import { getJob, progress } from "../../lib/jobs/queue";
import { loadRunner } from "../runners/index";
import type { JobContext } from "../runners/types";
import { formatLine, RESULT_MARK, type EntryResult } from "./protocol";

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
const say = (line: string, level: "info" | "warn" | "error" = "info") => {
  for (const l of line.split("\n")) process.stdout.write(formatLine(level, l) + "\n");
};

function flag(name: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (!v) {
    say(`usage: node --import tsx workers/ray/entry.ts --job ID --fence LEASE_TOKEN (missing --${name})`, "error");
    process.exit(2);
  }
  return v;
}

async function main(): Promise<number> {
  const jobId = flag("job");
  const fence = { jobId, leaseToken: flag("fence") };
  const controller = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    process.on(sig, () => {
      say(`${sig}: stopping the runner`, "warn");
      if (!controller.signal.aborted) controller.abort(new Error(`stopped by ${sig}`));
    });
  }

  let result: EntryResult;
  try {
    const job = await getJob(jobId);
    if (job.status !== "running" || job.leaseToken !== fence.leaseToken) throw new LeaseLostError(jobId);
    const runner = await loadRunner(job.kind);
    if (!runner) throw new Error(`unknown job kind "${job.kind}"`);
    const gpu = process.env.CUDA_VISIBLE_DEVICES?.trim() || null; // set by Ray when GPUs were requested
    say(`Ray entrypoint: ${job.kind} job ${jobId} (attempt ${job.attempts}) on ${os.hostname()}, pid ${process.pid}, ${gpu ? `GPU ${gpu}` : "CPU"}`);
    const ctx: JobContext = {
      job: { id: job.id, kind: job.kind, payload: job.payload, runId: job.runId, attempts: job.attempts },
      fence,
      gpu,
      signal: controller.signal,
      progress: async (fraction, message) => {
        if (!(await progress(jobId, fence.leaseToken, fraction, message))) throw new LeaseLostError(jobId);
      },
      log: (line, level = "info") => say(String(line), level),
    };
    const value = await runner(ctx);
    if (controller.signal.aborted) {
      say("runner stopped before finishing: no result", "warn");
      return 143;
    }
    const json = value === undefined ? undefined : JSON.stringify(value);
    result = { ok: true, value: json === undefined ? null : JSON.parse(json) };
  } catch (e) {
    if (controller.signal.aborted) {
      say(`runner stopped: ${errorText(e)}`, "warn");
      return 143;
    }
    result = { ok: false, message: errorText(e) || "runner failed", stack: e instanceof Error ? (e.stack ?? null) : null, retryable: isRetryable(e) };
  }
  process.stdout.write(RESULT_MARK + JSON.stringify(result) + "\n");
  return result.ok ? 0 : 1;
}

const code = await main();
process.exit(code);
