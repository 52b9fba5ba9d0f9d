// Integration: cancel latency, SIGTERM shutdown and runner failures, with real worker processes.
import { describe, expect, it } from "vitest";
import { countJobs } from "../../lib/db/jobs";
import { getRun } from "../../lib/db/runs";
import { enqueue, getJob, requestCancel, tailLog } from "../../lib/jobs";
import { makeRun, marksOf, sleep, spawnWorker, stopGracefully, useWorkerSuite, waitFor } from "../helpers/workers";

useWorkerSuite("control");

const running = async (id: string) => (await getJob(id)).status === "running" && marksOf(id).length > 0;

describe("cancel", () => {
  it("stops a running job within 5 s with the default heartbeat and grace, even if the runner ignores the signal", async () => {
    // Production timing for what cancel latency depends on: 1 s heartbeat, 2 s cancel grace.
    const w = spawnWorker({ TURNLENS_JOB_LEASE_MS: "10000", TURNLENS_WORKER_HEARTBEAT_MS: "1000", TURNLENS_WORKER_CANCEL_GRACE_MS: "2000" }, [
      "--concurrency",
      "2",
    ]);
    const runId = await makeRun("cancel");
    const polite = await enqueue({ kind: "selftest", payload: { steps: 300, stepMs: 100 }, runId });
    const stubborn = await enqueue({ kind: "selftest", payload: { steps: 300, stepMs: 100, ignoreSignal: true } });
    await waitFor("both jobs running", async () => (await running(polite.id)) && (await running(stubborn.id)), 20_000);

    const latency = async (id: string) => {
      const t0 = Date.now();
      await requestCancel(id);
      await waitFor(`job ${id} canceled`, async () => (await getJob(id)).status === "canceled", 10_000, 20);
      return Date.now() - t0;
    };
    const [politeMs, stubbornMs] = await Promise.all([latency(polite.id), latency(stubborn.id)]);
    console.log(`cancel latency: cooperative runner ${politeMs} ms, runner ignoring the signal ${stubbornMs} ms`);
    expect(politeMs).toBeLessThan(5_000);
    expect(stubbornMs).toBeLessThan(5_000);

    expect(await getJob(stubborn.id)).toMatchObject({ status: "canceled", error: expect.stringContaining("did not stop in time") });
    expect(await getJob(polite.id)).toMatchObject({ status: "canceled", error: null });
    await waitFor("the run to be marked canceled", async () => getRun(runId).status === "canceled");
    // The abandoned runner keeps going, but its fenced writes are refused from the cancel on.
    const after = marksOf(stubborn.id).length;
    await sleep(400);
    expect(marksOf(stubborn.id).length).toBe(after);
    const log = (await tailLog(stubborn.id, 0, 1000)).lines.map((l) => l.line);
    expect(log).toContain("cancel requested: stopping the runner");
    await stopGracefully(w);
  });
});

describe("shutdown", () => {
  it("SIGTERM: exits 0, re-queues its jobs without counting the attempt, and another worker finishes them", async () => {
    const w = spawnWorker({}, ["--concurrency", "2"]); // shutdown grace 1 s
    const a = await enqueue({ kind: "selftest", payload: { steps: 25, stepMs: 100 } });
    const b = await enqueue({ kind: "selftest", payload: { steps: 25, stepMs: 100, ignoreSignal: true } });
    await waitFor("both jobs running", async () => (await running(a.id)) && (await running(b.id)), 20_000);
    const t0 = Date.now();
    w.child.kill("SIGTERM");
    expect(await w.exited, w.output()).toEqual({ code: 0, signal: null });
    const exitMs = Date.now() - t0;
    expect(exitMs).toBeLessThan(4_000); // grace 1 s + the writes
    expect(w.output()).toContain("SIGTERM: no new claims");

    expect(countJobs({ status: "running" })).toBe(0);
    for (const id of [a.id, b.id]) {
      expect(await getJob(id)).toMatchObject({ status: "queued", attempts: 0, leaseExpiresAt: null });
      expect((await tailLog(id, 0, 1000)).lines.map((l) => l.line)).toContain("worker shutting down: job re-queued (attempt not counted)");
    }
    const doneBefore = { a: marksOf(a.id).length, b: marksOf(b.id).length };
    expect(doneBefore.a).toBeLessThan(25);

    const w2 = spawnWorker({}, ["--concurrency", "2"]);
    await waitFor("both jobs done", async () => countJobs({ status: "succeeded" }) === 2, 20_000);
    for (const [id, before] of [
      [a.id, doneBefore.a],
      [b.id, doneBefore.b],
    ] as const) {
      expect(marksOf(id).map((m) => m.step)).toEqual([...Array(25).keys()]);
      expect(await getJob(id)).toMatchObject({ attempts: 1, result: { resumed: before } });
    }
    await stopGracefully(w2);
  });

  it("SIGTERM on an idle worker exits 0 at once", async () => {
    const w = spawnWorker();
    await w.ready;
    const t0 = Date.now();
    await stopGracefully(w);
    expect(Date.now() - t0).toBeLessThan(2_000);
  });
});

describe("failures", () => {
  it("fails unknown kinds and throwing runners, retries retryable errors, stores results", async () => {
    const runId = await makeRun("fails");
    const unknown = await enqueue({ kind: "nope", payload: {} });
    const broken = await enqueue({ kind: "selftest", payload: { steps: 3, stepMs: 1, failAtStep: 1 }, runId });
    const flaky = await enqueue({ kind: "selftest", payload: { steps: 3, stepMs: 1, failAtStep: 1, retryable: true, failAttempts: 1 } });
    const hopeless = await enqueue({ kind: "selftest", payload: { steps: 3, stepMs: 1, failAtStep: 0, retryable: true }, maxAttempts: 2 });
    const badPayload = await enqueue({ kind: "selftest", payload: { steps: "many" } });
    const noCrash = await enqueue({ kind: "selftest", payload: { steps: 3, stepMs: 1, crashAtStep: 0 } }); // crash not allowed
    const ok = await enqueue({ kind: "selftest", payload: { steps: 2, stepMs: 1 } });
    const all = [unknown, broken, flaky, hopeless, badPayload, noCrash, ok].map((j) => j.id);
    const w = spawnWorker({}, ["--concurrency", "4"]);
    await waitFor("all jobs finished", () => countJobs({ idIn: all, statusIn: ["succeeded", "failed"] }) === all.length);

    expect(await getJob(unknown.id)).toMatchObject({
      status: "failed",
      attempts: 1,
      error: expect.stringMatching(/^unknown job kind "nope"; this worker runs: .*\bselftest\b/),
    });
    expect(await getJob(broken.id)).toMatchObject({ status: "failed", attempts: 1, error: "selftest: failure at step 1 (attempt 1)" });
    await waitFor("the run to be marked failed", async () => {
      const r = getRun(runId);
      return r.status === "failed" && r.error === "selftest: failure at step 1 (attempt 1)";
    });
    expect(await getJob(flaky.id)).toMatchObject({ status: "succeeded", attempts: 2, result: { steps: 3, resumed: 1, attempt: 2 } });
    expect(marksOf(flaky.id).map((m) => [m.step, m.attempt])).toEqual([
      [0, 1],
      [1, 2],
      [2, 2],
    ]);
    expect(await getJob(hopeless.id)).toMatchObject({
      status: "failed",
      attempts: 2,
      error: "selftest: failure at step 0 (attempt 2) (no attempts left: 2/2)",
    });
    expect((await getJob(badPayload.id)).error).toMatch(/steps/);
    expect((await getJob(noCrash.id)).error).toMatch(/TURNLENS_SELFTEST_ALLOW_CRASH=1/);
    expect(await getJob(ok.id)).toMatchObject({ status: "succeeded", progress: 1, progressMessage: "step 2/2", result: { steps: 2, resumed: 0, attempt: 1 } });

    const log = (await tailLog(broken.id, 0, 1000)).lines;
    expect(log.some((l) => l.level === "error" && l.line.startsWith("runner failed: Error: selftest: failure at step 1"))).toBe(true);
    expect(w.output()).toContain(`[${broken.id}] ERROR runner failed`);
    await stopGracefully(w);
  });
});
