// `selftest`: a job kind that exists to test the job queue and the worker (test/jobs), not to do work.
// For each step it sleeps stepMs (or, with `busy`, spins the CPU without ever yielding), writes a
// marker row through writeTransaction(ctx.fence, ...) and reports progress. The markers make "ran exactly once" checkable: one row per (job, step), enforced
// by a primary key, written only while this worker holds the lease; a re-run resumes after the last
// marker, like a real runner resuming from its last checkpoint.
//
// Markers are JobLog rows with seq = -(step + 1) and level "mark" (line: JSON {step, attempt, token,
// pid, worker}: the job process and the worker that started it). Negative seqs are reserved for such
// rows and never shown by tailLog; using JobLog keeps the Prisma schema free of a test-only table
// (an extra table would read as migration drift).
import { setTimeout as sleep } from "node:timers/promises";
import { writeTransaction } from "../../lib/db/raw";
import { markedSeqs, writeMark } from "../../lib/db/job-marks";
import { SelftestPayloadSchema } from "../../lib/jobs/kinds";
import { RetryableJobError, type JobRunner } from "./types";

export { SelftestPayloadSchema, type SelftestPayload } from "../../lib/jobs/kinds";

export const SELFTEST_MARK_LEVEL = "mark";
export const markSeq = (step: number) => -(step + 1);

export interface SelftestMark {
  step: number;
  attempt: number;
  token: string;
  /** the job process that wrote it */
  pid: number;
  /** the worker process that ran the job (the job process's parent) */
  worker: number;
}

/** Spins the CPU for ms without yielding: a runner that never awaits (what a tight compute loop looks like). */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

export const selftest: JobRunner = async (ctx) => {
  const p = SelftestPayloadSchema.parse(ctx.job.payload);
  if (p.crashAtStep !== undefined && process.env.TURNLENS_SELFTEST_ALLOW_CRASH !== "1") {
    throw new Error("selftest: crashAtStep kills the worker process; it is honoured only when the worker runs with TURNLENS_SELFTEST_ALLOW_CRASH=1");
  }
  const done = new Set(markedSeqs(ctx.job.id).map((seq) => -seq - 1));
  ctx.log(`selftest: ${p.steps} steps of ${p.stepMs} ms, attempt ${ctx.job.attempts}, ${done.size} step(s) already done`);
  for (let step = 0; step < p.steps; step++) {
    if (done.has(step)) continue;
    if (p.busy)
      spin(p.stepMs); // never yields: only the worker's kill can stop this
    else if (p.ignoreSignal) await sleep(p.stepMs);
    else await sleep(p.stepMs, undefined, { signal: ctx.signal }); // rejects as soon as the job is stopped
    if (step === p.crashAtStep) {
      // The runner runs in a job process (workers/job-process.ts) whose parent is the worker.
      ctx.log(`selftest: crashing the worker (SIGKILL) at step ${step}`, "warn");
      process.kill(process.ppid, "SIGKILL");
      await new Promise(() => undefined);
    }
    if (step === p.dieAtStep) {
      const how = "code" in p.dieWith ? `exit code ${p.dieWith.code}` : p.dieWith.signal;
      process.stderr.write(`selftest: the job process dies at step ${step} (${how})\n`);
      if ("code" in p.dieWith) process.exit(p.dieWith.code);
      process.kill(process.pid, p.dieWith.signal);
      await new Promise(() => undefined);
    }
    if (step === p.failAtStep && ctx.job.attempts <= (p.failAttempts ?? Infinity)) {
      const msg = `selftest: failure at step ${step} (attempt ${ctx.job.attempts})`;
      throw p.retryable ? new RetryableJobError(msg) : new Error(msg);
    }
    const mark: SelftestMark = { step, attempt: ctx.job.attempts, token: ctx.fence.leaseToken, pid: process.pid, worker: process.ppid };
    // Fenced: throws LeaseLostError (and writes nothing) once this worker no longer holds the job.
    writeTransaction(ctx.fence, (db) => writeMark(ctx.job.id, markSeq(step), SELFTEST_MARK_LEVEL, JSON.stringify(mark), db));
    const progress = ctx.progress(p.steps ? (step + 1) / p.steps : 1, `step ${step + 1}/${p.steps}`);
    if (p.busy)
      progress.catch(() => undefined); // sent when the loop ends; the fenced write above is the lease check
    else await progress;
  }
  return { steps: p.steps, resumed: done.size, attempt: ctx.job.attempts };
};
