// Integration: a healthy job keeps its lease however busy its runner is. Three workers share the
// database with a 4 s lease and reap every 0.3 s; the job's runner computes for 40 s in synchronous
// 10 s chunks (each chunk alone is 2.5 leases long and would have starved a heartbeat on the runner's
// event loop; the reapers look about 130 times meanwhile). It must run once: one claim, no takeover,
// succeeded.
// (The lease is not the 1.5 s of the other tests: on a loaded 2-core machine a worker can wait that
// long for the CPU at all, which says nothing about the runner.)
import { afterAll, describe, expect, it } from "vitest";
import { getRun } from "../../lib/db/runs";
import { enqueue, getJob, tailLog } from "../../lib/jobs";
import { killAllWorkers, makeRun, marksOf, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const env = useTempDatabase("lease-hold");
afterAll(async () => {
  await killAllWorkers();
  await env.cleanup();
});

describe("lease", () => {
  it("a 40-second never-yielding job on 3 workers is never taken over", async () => {
    const workers = [0, 1, 2].map(() => spawnWorker({ TURNLENS_JOB_LEASE_MS: "4000", TURNLENS_WORKER_HEARTBEAT_MS: "500" })); // reap 300 ms
    await Promise.all(workers.map((w) => w.ready));
    const runId = await makeRun("lease-hold");
    const STEPS = 4;
    const job = await enqueue({ kind: "selftest", payload: { steps: STEPS, stepMs: 10_000, busy: true }, runId });
    const t0 = Date.now();
    await waitFor("the job to end", async () => ["succeeded", "failed", "canceled"].includes((await getJob(job.id)).status), 90_000, 500);
    const final = await getJob(job.id);
    console.log(`40-second busy job: ${final.status} after ${Date.now() - t0} ms, attempts ${final.attempts}`);
    expect(final, final.error ?? "").toMatchObject({ status: "succeeded", attempts: 1, result: { steps: STEPS, resumed: 0, attempt: 1 } });
    const marks = marksOf(job.id);
    expect(marks.map((m) => m.step)).toEqual([...Array(STEPS).keys()]);
    expect(new Set(marks.map((m) => m.token))).toEqual(new Set([final.leaseToken])); // one lease wrote every step
    expect(marks.at(-1)!.time - marks[0].time).toBeGreaterThan(25); // it really ran for ~40 s (marks are seconds)
    const lines = (await tailLog(job.id, 0, 1000)).lines.map((l) => l.line);
    expect(lines.filter((l) => l.startsWith("claimed by"))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith("[reaper]"))).toEqual([]);
    expect(lines.filter((l) => l.includes("lease"))).toEqual([]);
    expect(getRun(runId).status).toBe("succeeded");
  }, 120_000);
});
