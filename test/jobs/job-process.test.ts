// Integration: runners in job processes of their own. A runner that never yields is still canceled
// and timed out (the worker kills its process group), a job process that dies fails its job with the
// exit code or signal, and a job process never outlives its worker.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { countJobs } from "../../lib/db/jobs";
import { enqueue, getJob, requestCancel, tailLog } from "../../lib/jobs";
import { launchRun } from "../../lib/runs/launch";
import { launchRunSchema } from "../../lib/schemas/runs";
import { alive, marksOf, sleep, spawnWorker, stopGracefully, useWorkerSuite, waitFor } from "../helpers/workers";

const suite = useWorkerSuite("job-process");

/** The worker's child processes (its job processes). */
const childrenOf = (pid: number) => {
  try {
    return execFileSync("pgrep", ["-P", String(pid)])
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};
const log = async (id: string) => (await tailLog(id, 0, 1000)).lines.map((l) => l.line);

// Production timing for what cancel latency depends on: 1 s heartbeat, 2 s cancel grace.
const PROD = { TURNLENS_JOB_LEASE_MS: "10000", TURNLENS_WORKER_HEARTBEAT_MS: "1000", TURNLENS_WORKER_CANCEL_GRACE_MS: "2000" };

describe("a runner that never yields", () => {
  it("is canceled within 5 s: its process group is killed after the grace period and it writes nothing more", async () => {
    const w = spawnWorker(PROD);
    // 1000 steps of 1 s of pure CPU with no await anywhere: the signal can never be seen
    const job = await enqueue({ kind: "selftest", payload: { steps: 1000, stepMs: 1000, busy: true } });
    await waitFor("two steps done", () => marksOf(job.id).length >= 2, 30_000, 50);
    const jobPid = marksOf(job.id)[0].pid;
    expect(childrenOf(w.pid)).toContain(jobPid);
    const t0 = Date.now();
    await requestCancel(job.id);
    await waitFor("canceled", async () => (await getJob(job.id)).status === "canceled", 10_000, 20);
    const ms = Date.now() - t0;
    console.log(`cancel latency of a never-yielding runner: ${ms} ms (heartbeat 1 s + grace 2 s + kill)`);
    expect(ms).toBeLessThan(5_000);
    expect(await getJob(job.id)).toMatchObject({ status: "canceled", error: "canceled; the runner did not stop in time and was killed" });
    // the job ended only once its process was gone: not one step after it
    expect(alive(jobPid)).toBe(false);
    const n = marksOf(job.id).length;
    await sleep(1_500);
    expect(marksOf(job.id).length).toBe(n);
    expect(await log(job.id)).toContain("runner did not stop within 2000 ms of the cancel request: killing its process group");
    await stopGracefully(w);
  });

  it("is stopped at its timeout and failed with `timed out after N s`; a cooperative one too", async () => {
    const w = spawnWorker({ TURNLENS_WORKER_CANCEL_GRACE_MS: "500" }, ["--concurrency", "2"]);
    const busy = await enqueue({ kind: "selftest", payload: { steps: 100, stepMs: 500, busy: true }, timeoutMs: 2_000 });
    const polite = await enqueue({ kind: "selftest", payload: { steps: 100, stepMs: 100 }, timeoutMs: 1_500 });
    const quick = await enqueue({ kind: "selftest", payload: { steps: 2, stepMs: 10 }, timeoutMs: 10_000 });
    await waitFor("all ended", async () => countJobs({ statusIn: ["failed", "succeeded"] }) === 3, 20_000);
    for (const [j, limit] of [
      [busy, "2"],
      [polite, "1.5"],
    ] as const) {
      const row = await getJob(j.id);
      expect(row).toMatchObject({ status: "failed", attempts: 1, error: `timed out after ${limit} s` });
      const ranMs = row.finishedAt!.getTime() - row.startedAt!.getTime();
      expect(ranMs).toBeGreaterThanOrEqual(row.timeoutMs!);
      expect(ranMs).toBeLessThan(row.timeoutMs! + 500 + 2_000); // grace + process exit and the writes
      expect(marksOf(j.id).length).toBeLessThan(100);
    }
    expect(await log(busy.id)).toContain("runner did not stop within 500 ms of the timeout request: killing its process group");
    expect(await getJob(quick.id)).toMatchObject({ status: "succeeded", timeoutMs: 10_000 });
    await stopGracefully(w);
  });
});

describe("a job process that dies", () => {
  it("fails its job with the exit code or the signal, and the worker carries on", async () => {
    const w = spawnWorker({}, ["--concurrency", "3"]);
    const exit3 = await enqueue({ kind: "selftest", payload: { steps: 5, stepMs: 10, dieAtStep: 2, dieWith: { code: 3 } } });
    const segv = await enqueue({ kind: "selftest", payload: { steps: 5, stepMs: 10, dieAtStep: 1, dieWith: { signal: "SIGSEGV" } } });
    const ok = await enqueue({ kind: "selftest", payload: { steps: 3, stepMs: 10 } });
    await waitFor("all ended", async () => countJobs({ statusIn: ["failed", "succeeded"] }) === 3, 20_000);
    expect(await getJob(exit3.id)).toMatchObject({ status: "failed", attempts: 1, error: "job process exited with code 3 before its runner returned" });
    expect(await getJob(segv.id)).toMatchObject({ status: "failed", attempts: 1, error: "job process was killed by SIGSEGV before its runner returned" });
    expect(marksOf(exit3.id).map((m) => m.step)).toEqual([0, 1]);
    // what the dying process printed is in the job's log
    expect(await log(exit3.id)).toContain("selftest: the job process dies at step 2 (exit code 3)");
    expect(await getJob(ok.id)).toMatchObject({ status: "succeeded" });
    await stopGracefully(w);
  });

  it("never outlives its worker: SIGKILL of the worker takes a never-yielding job process with it", async () => {
    const w = spawnWorker();
    const job = await enqueue({ kind: "selftest", payload: { steps: 1000, stepMs: 300, busy: true } });
    await waitFor("a step done", () => marksOf(job.id).length >= 1, 30_000, 20);
    const jobPid = marksOf(job.id)[0].pid;
    expect(alive(jobPid)).toBe(true);
    w.child.kill("SIGKILL");
    await w.exited;
    const t0 = Date.now();
    await waitFor("the job process to die", () => !alive(jobPid), 5_000, 20);
    console.log(`orphaned job process gone ${Date.now() - t0} ms after its worker died`);
  });
});

describe("per-kind concurrency (the registry's limit)", () => {
  it("runs at most one train job per worker, while other kinds use the free slots", async () => {
    // an "engine" that never answers: a train job then waits on it until stopped
    const fake = path.join(suite().dir, "silent-engine.sh");
    fs.writeFileSync(fake, "#!/bin/sh\nexec sleep 600\n", { mode: 0o755 });
    const train = () => launchRun(launchRunSchema.parse({ jobKind: "train", config: { steps: 2, groupsPerStep: 1, groupSize: 2, threads: 1 } }));
    const a = await train();
    const b = await train();
    const w = spawnWorker({ TURNLENS_PYTHON: fake }, ["--concurrency", "3"]);
    const side = await enqueue({ kind: "selftest", payload: { steps: 30, stepMs: 100 } });
    const status = async (id: string) => (await getJob(id)).status;
    await waitFor(
      "one train job and the selftest running",
      async () => (await status(a.jobId!)) === "running" && (await status(side.id)) === "running",
      20_000,
    );
    await sleep(2_000); // a free slot all along, yet the second train job must wait
    expect(await status(b.jobId!)).toBe("queued");
    await requestCancel(a.jobId!);
    await waitFor("the second train job claimed once the first ended", async () => (await status(b.jobId!)) === "running", 15_000);
    expect(await status(a.jobId!)).toBe("canceled");
    await requestCancel(b.jobId!);
    await waitFor("second canceled", async () => (await status(b.jobId!)) === "canceled", 10_000);
    await waitFor("selftest done", async () => (await status(side.id)) === "succeeded", 20_000);
    await stopGracefully(w);
  });
});
