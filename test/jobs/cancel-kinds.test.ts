// Integration: every launchable job kind, busy with a big job, is canceled within 5 s of the request
// with production heartbeat and grace, and writes nothing after it ended: the baseline (100,000
// episodes), training (the tiny PyTorch engine, 1,000 steps) and ONNX evaluation (100,000 tasks).
// (The never-yielding selftest: job-process.test.ts.)
import { execFileSync } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killAllWorkers, sleep, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const env = useTempDatabase("cancel-kinds");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { getRun } = await import("../../lib/db/runs");
const { listSteps, runTrajectoryTotals } = await import("../../lib/db/rollouts");
const { getJob, requestCancel, tailLog } = await import("../../lib/jobs");

afterEach(killAllWorkers);
afterAll(() => env.cleanup());

const PROD = { TURNLENS_JOB_LEASE_MS: "10000", TURNLENS_WORKER_HEARTBEAT_MS: "1000", TURNLENS_WORKER_CANCEL_GRACE_MS: "2000" };

/** Rows a run has stored: rollout steps (batches) and trajectories. */
const stored = (runId: string) => ({ steps: listSteps(runId, 1, 1).total, trajectories: runTrajectoryTotals(runId).trajectories });

/** Every process below pid (job processes, engines). */
function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    kids = execFileSync("pgrep", ["-P", String(pid)])
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(getRun(runId).status);

/** The job's process, from the worker's log line "runner in job process <pid> ...". */
async function jobProcessOf(jobId: string): Promise<number> {
  const line = (await tailLog(jobId, 0, 1000)).lines.map((l) => l.line).find((l) => l.startsWith("runner in job process "));
  return Number(line!.split(" ")[4]);
}

async function cancelMeasured(jobId: string, runId: string, workerPid: number, what: string, processes = 1) {
  const jobPid = await jobProcessOf(jobId);
  expect(descendants(workerPid), `${what}: its job process runs below the worker`).toContain(jobPid);
  const below = [jobPid, ...descendants(jobPid)];
  expect(below.length, `${what}: the job process and what it started`).toBeGreaterThanOrEqual(processes);
  const t0 = Date.now();
  await requestCancel(jobId);
  await waitFor(`${what} canceled`, async () => (await getJob(jobId)).status === "canceled", 10_000, 20);
  const ms = Date.now() - t0;
  const atEnd = stored(runId);
  console.log(`cancel latency, ${what}: ${ms} ms (${atEnd.steps} batches/steps stored)`);
  expect(ms).toBeLessThan(5_000);
  await waitFor(`${what}: run marked canceled`, () => getRun(runId).status === "canceled", 2_000, 20); // mirrored right after the job
  // nothing runs on and nothing is written after the job ended
  await sleep(1_500);
  expect(stored(runId)).toEqual(atEnd);
  // the job process and everything it started are gone (the worker keeps only its idle spare)
  expect(descendants(workerPid).filter((p) => below.includes(p))).toEqual([]);
  return ms;
}

describe("cancel of each launchable kind, mid-run", () => {
  it("baseline, train and onnx-eval stop within 5 s and write nothing afterwards", async () => {
    const w = spawnWorker(PROD);
    const launch = (body: unknown) => launchRun(launchRunSchema.parse(body));

    // baseline: 100,000 episodes in batches of 40
    const base = await launch({ jobKind: "baseline", name: "big-baseline", config: { envId: "sokoban", episodes: 100_000, episodesPerBatch: 40 } });
    await waitFor("baseline batches stored", () => stored(base.runId).steps >= 3, 60_000, 50);
    await cancelMeasured(base.jobId!, base.runId, w.pid, "baseline (100,000 episodes)");

    // a small training run to export the ONNX policy the evaluation needs
    const source = await launch({
      jobKind: "train",
      name: "source",
      config: { steps: 2, groupsPerStep: 2, groupSize: 4, evalInterval: 2, evalEpisodes: 8, checkpointInterval: 2, threads: 1, exportOnnx: true },
    });
    await waitFor("source training finished", () => finished(source.runId), 150_000, 200);
    expect(getRun(source.runId).status, getRun(source.runId).error ?? "").toBe("succeeded");

    // train: 1,000 steps on the tiny engine (a Python grandchild of the worker)
    const train = await launch({
      jobKind: "train",
      name: "long-train",
      config: { steps: 1000, groupsPerStep: 2, groupSize: 4, evalInterval: 1000, evalEpisodes: 8, checkpointInterval: 1000, threads: 1 },
    });
    await waitFor("training steps stored", () => stored(train.runId).steps >= 2, 120_000, 100);
    await cancelMeasured(train.jobId!, train.runId, w.pid, "train (1,000 steps)", 2); // with its engine

    // onnx-eval: 100,000 held-out tasks
    const evalRun = await launch({ jobKind: "onnx-eval", name: "big-eval", config: { sourceRunId: source.runId, episodes: 100_000, episodesPerBatch: 20 } });
    await waitFor("evaluation batches stored", () => stored(evalRun.runId).steps >= 2, 60_000, 50);
    await cancelMeasured(evalRun.jobId!, evalRun.runId, w.pid, "onnx-eval (100,000 tasks)");

    w.child.kill("SIGTERM");
    expect(await w.exited, w.output()).toEqual({ code: 0, signal: null });
  }, 400_000);
});
