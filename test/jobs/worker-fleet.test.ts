// Integration: real worker processes (node --import tsx workers/worker.ts) sharing one SQLite file.
// Exactly-once under contention, recovery from a SIGKILLed worker, and giving up after maxAttempts.
import { describe, expect, it } from "vitest";
import { countJobs } from "../../lib/db/jobs";
import { getRun } from "../../lib/db/runs";
import { LeaseLostError, writeTransaction } from "../../lib/db/raw";
import { enqueue, getJob, tailLog } from "../../lib/jobs";
import { makeRun, marksOf, spawnWorker, stopGracefully, useWorkerSuite, waitFor, type WorkerProcess } from "../helpers/workers";

useWorkerSuite("fleet");

describe("worker fleet", () => {
  it("3 workers x 50 jobs: every job runs exactly once", async () => {
    const N = 50;
    const STEPS = 3;
    // Normal lease and heartbeat here: this test is about contention, not expiry.
    const slow = { TURNLENS_JOB_LEASE_MS: "10000", TURNLENS_WORKER_HEARTBEAT_MS: "1000" };
    const workers = [0, 1, 2].map(() => spawnWorker(slow, ["--concurrency", "2"]));
    await Promise.all(workers.map((w) => w.ready)); // all three polling before the first job appears
    const ids: string[] = [];
    for (let i = 0; i < N; i++) ids.push((await enqueue({ kind: "selftest", payload: { steps: STEPS, stepMs: 15 } })).id);
    // each job starts a job process (Node, tsx and zod: about 0.7 s of CPU): 50 of them on a busy
    // 2-core machine take 40-90 s
    await waitFor("all 50 jobs to finish", () => countJobs({ statusIn: ["succeeded", "failed", "canceled"] }) === N, 150_000, 100);
    await stopGracefully(workers);

    const jobs = await Promise.all(ids.map((id) => getJob(id)));
    const pids = new Set<number>();
    for (const job of jobs) {
      expect(job, job.error ?? "").toMatchObject({ status: "succeeded", attempts: 1, result: { steps: STEPS, resumed: 0, attempt: 1 } });
      const marks = marksOf(job.id);
      expect(marks.map((m) => m.step)).toEqual([0, 1, 2]);
      // every step written once, by the one lease that ran the job, in one job process of one worker
      expect(new Set(marks.map((m) => m.token))).toEqual(new Set([job.leaseToken]));
      expect(new Set(marks.map((m) => m.pid)).size).toBe(1);
      expect(new Set(marks.map((m) => m.worker)).size).toBe(1);
      pids.add(marks[0].worker);
      const claims = (await tailLog(job.id, 0, 1000)).lines.filter((l) => l.line.startsWith("claimed by"));
      expect(claims).toHaveLength(1);
    }
    // the work was shared (each worker claims as fast as it can; at least two must have won some)
    expect(pids.size).toBeGreaterThanOrEqual(2);
    const outputs = workers.map((w) => w.output()).join("\n");
    expect(outputs).toContain(`[${ids[0]}] claimed by`); // log lines are echoed with the job id
  }, 180_000);

  it("a SIGKILLed worker's job is re-run elsewhere after its lease expires, resuming without double writes", async () => {
    const runId = await makeRun("sigkill");
    // long enough (6 s) that A is still at it once B is up, even when A's job process starts at once (its spare)
    const STEPS = 40;
    const job = await enqueue({ kind: "selftest", payload: { steps: STEPS, stepMs: 150 }, runId });
    const a = spawnWorker();
    await waitFor("worker A to claim", async () => (await getJob(job.id)).leaseOwner?.includes(`:${a.pid}:`));
    const b = spawnWorker(); // idle standby: must not touch the job while A holds it
    await b.ready;
    await waitFor("3 steps done by A", () => marksOf(job.id).length >= 3, 15_000, 20);
    const tokenA = (await getJob(job.id)).leaseToken!;
    a.child.kill("SIGKILL");
    const killedAt = Date.now();
    expect((await a.exited).signal).toBe("SIGKILL");
    const marksBefore = marksOf(job.id).length;

    const reclaimed = await waitFor(
      "the job re-claimed by B",
      async () => {
        const j = await getJob(job.id);
        return j.attempts === 2 && j.status === "running" ? j : null;
      },
      15_000,
      20,
    );
    const recoveryMs = Date.now() - killedAt;
    expect(reclaimed.leaseOwner).toContain(`:${b.pid}:`);
    await waitFor("the job to succeed", async () => (await getJob(job.id)).status === "succeeded", 15_000);
    const doneMs = Date.now() - killedAt;
    console.log(`SIGKILL recovery: re-claimed ${recoveryMs} ms after the kill (lease 1500 ms), finished after ${doneMs} ms`);
    expect(recoveryMs).toBeLessThan(5_000);

    const marks = marksOf(job.id);
    expect(marks.map((m) => m.step)).toEqual([...Array(STEPS).keys()]); // each step exactly once
    const byA = marks.filter((m) => m.token === tokenA);
    expect(byA.length).toBeGreaterThanOrEqual(3);
    expect(byA.length).toBeLessThanOrEqual(marksBefore); // A wrote nothing after it died
    expect(marks.slice(byA.length).every((m) => m.attempt === 2 && m.worker === b.pid)).toBe(true);
    const final = await getJob(job.id);
    expect(final).toMatchObject({ status: "succeeded", attempts: 2, result: { steps: STEPS, resumed: byA.length, attempt: 2 } });
    // the dead worker's token fences nothing any more
    expect(() => writeTransaction({ jobId: job.id, leaseToken: tokenA }, () => 1)).toThrow(LeaseLostError);
    const run = await waitFor("the run to be marked succeeded", async () => {
      const r = getRun(runId);
      return r.status === "succeeded" ? r : null;
    });
    expect(run.progress).toBe(1);
    const log = (await tailLog(job.id, 0, 1000)).lines.map((l) => l.line);
    expect(log.some((l) => l.startsWith("[reaper] worker lost: lease of") && l.includes(`:${a.pid}:`))).toBe(true);
    await stopGracefully([b]);
  });

  it("a job whose worker keeps dying is failed after maxAttempts with the reason", async () => {
    const runId = await makeRun("doomed");
    const job = await enqueue({ kind: "selftest", payload: { steps: 3, stepMs: 10, crashAtStep: 1 }, runId, maxAttempts: 2 });
    const crashEnv = { TURNLENS_SELFTEST_ALLOW_CRASH: "1" };
    const crashed: number[] = [];
    let survivor: WorkerProcess | null = null;
    // Each worker either dies on the job (attempts 1 and 2) or, once none are left, reaps it as failed.
    for (let i = 0; i < 4 && !survivor; i++) {
      const w = spawnWorker(crashEnv);
      let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
      void w.exited.then((e) => (exit = e));
      const r = await waitFor(
        "the worker to die or the job to fail",
        async () => (exit ? { exit } : (await getJob(job.id)).status === "failed" ? { exit: null } : null),
        20_000,
      );
      if (r.exit) {
        expect(r.exit.signal).toBe("SIGKILL");
        crashed.push(w.pid);
      } else survivor = w;
    }
    expect(crashed).toHaveLength(2);
    expect(survivor).not.toBeNull();
    const final = await getJob(job.id);
    expect(final).toMatchObject({ status: "failed", attempts: 2, error: "worker lost: lease expired after 2 attempts" });
    // the Run is mirrored by the statement right after the job's (no cross-statement transaction)
    const run = await waitFor("the run to be marked failed", async () => {
      const r = getRun(runId);
      return r.status === "failed" ? r : null;
    });
    expect(run.error).toBe("worker lost: lease expired after 2 attempts");
    expect(marksOf(job.id).map((m) => [m.step, m.attempt])).toEqual([[0, 1]]); // attempt 2 resumed at step 1
    await stopGracefully([survivor!]);
  });
});
