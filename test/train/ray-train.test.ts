// Train jobs on a Ray cluster, end to end with real parts: a local Ray head (ray[default] from PyPI,
// on loopback, started and stopped here), a real worker with TURNLENS_RAY_ADDRESS set, the Ray Jobs
// API, the real PyTorch engine, a real SQLite file. The run is live while Ray runs it, its job log
// holds the Ray job's lines, a Ray job stopped or killed outside TurnLens (Jobs API stop, SIGKILL,
// `ray stop` of the whole head) is resubmitted and resumes from its checkpoint without a duplicated
// step, and a cancel from TurnLens stops the Ray job.
//
// Ray comes from node_modules/.turnlens-ray-venv (scripts/test.sh installs it) or TURNLENS_RAY_BIN.
import { execFileSync } from "node:child_process";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { haveRay, pgrep, RAY, RayHead } from "../helpers/ray-head";
import { alive, killAllWorkers, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

if (!haveRay) console.warn(`ray-train: SKIPPED, no Ray at ${RAY} (scripts/test.sh installs ray[default] there; or set TURNLENS_RAY_BIN)`);

const db = useTempDatabase("ray-train");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { countRows } = await import("../helpers/db-inspect");
const { runSteps } = await import("../../lib/db/credit");
const { metricSteps } = await import("../helpers/metric-rows");
const { getRun } = await import("../../lib/db/runs");
const { requestCancel, getJob } = await import("../../lib/jobs/queue");
const { tailLog } = await import("../../lib/jobs/logs");
const { RESULT_MARK } = await import("../../workers/ray/protocol");

let head: RayHead;
let address = "";
let api: RayHead["api"];

beforeAll(async () => {
  if (!haveRay) return;
  head = await RayHead.start(2);
  address = head.address;
  api = head.api;
}, 180_000);

afterEach(killAllWorkers);

afterAll(async () => {
  await killAllWorkers();
  // nothing of this head may be left running
  if (haveRay) await head?.stop();
  await db.cleanup();
}, 120_000);

const childrenOf = (pid: number, pattern: string) => pgrep(pattern, pid);

/** The small budget of test/train/train-job.test.ts: 2 tasks x G=4 on FrozenLake, checkpoints every 2 steps. */
async function launch(name: string, extra: Record<string, unknown> = {}) {
  const body = launchRunSchema.parse({
    jobKind: "train",
    name,
    config: { steps: 6, groupsPerStep: 2, groupSize: 4, evalInterval: 2, evalEpisodes: 8, checkpointInterval: 2, threads: 1, device: "cpu", ...extra },
  });
  const r = await launchRun(body);
  return { runId: r.runId, jobId: r.jobId! };
}

const steps = (runId: string) => runSteps(runId).map((s) => s.step);
const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(getRun(runId).status);
const jobLog = async (jobId: string) => (await tailLog(jobId, 0, 5_000)).lines.map((l) => l.line);
/** This TurnLens job's Ray submissions, oldest first. */
const submissionsOf = async (jobId: string) =>
  (await api.list()).filter((d) => d.metadata?.turnlens_job === jobId).sort((a, b) => Number(a.start_time ?? 0) - Number(b.start_time ?? 0));

describe.skipIf(!haveRay)("train jobs on a Ray cluster (local head)", () => {
  it("runs live on Ray, copies its log, and resubmits a Ray job stopped or killed outside TurnLens, resuming from its checkpoint", async () => {
    const { runId, jobId } = await launch("ray-resubmit", { steps: 8 });
    const w = spawnWorker({ TURNLENS_RAY_ADDRESS: address, TURNLENS_RAY_POLL_MS: "250" });

    // Live: metrics stored while the Ray job still runs.
    await waitFor("the first step's metrics", () => metricSteps(runId, "rollout/success_rate").length > 0, 180_000, 100);
    const [first] = await submissionsOf(jobId);
    expect(first?.status, w.output()).toBe("RUNNING");
    expect(getRun(runId).status).toBe("running");

    // 1. Stopped through the Jobs API by someone else, once a checkpoint (step 1) and a later step are stored.
    await waitFor("step 2 stored", () => steps(runId).includes(2), 180_000, 50);
    expect(await api.stop(first.submission_id!)).toBe(true);

    // 2. The resubmitted job's entrypoint SIGKILLed (as a node's OOM killer would), after its checkpoint of step 5.
    await waitFor("the resubmission to store step 6", async () => (await submissionsOf(jobId)).length === 2 && steps(runId).includes(6), 180_000, 50);
    const entry = pgrep(`workers/ray/entry.ts --job ${jobId}`);
    expect(entry).toHaveLength(1);
    process.kill(entry[0], "SIGKILL");

    await waitFor("run finished", () => finished(runId), 240_000, 200);
    const out = w.output();
    expect(getRun(runId).status, out).toBe("succeeded");
    const subs = await submissionsOf(jobId);
    expect(
      subs.map((s) => s.status),
      out,
    ).toEqual(["STOPPED", "FAILED", "SUCCEEDED"]);

    const log = await jobLog(jobId);
    expect(log.filter((l) => l.startsWith("submitted Ray job "))).toHaveLength(3);
    expect(
      log.filter((l) => / ended STOPPED without a result .*: resubmitting; the runner resumes from the last checkpoint \(1\/3\)$/.test(l)),
      out,
    ).toHaveLength(1);
    expect(
      log.filter((l) => / ended FAILED without a result .*: resubmitting; the runner resumes from the last checkpoint \(2\/3\)$/.test(l)),
      out,
    ).toHaveLength(1);
    expect(
      log.filter((l) => /^resumed from the checkpoint of step \d+/.test(l)),
      out,
    ).toHaveLength(2);
    // Every line the Ray jobs printed is in the job log (the lease token redacted, the result line consumed).
    const token = (await getJob(jobId)).leaseToken ?? "";
    for (const s of subs) {
      const rayLines = (await api.logs(s.submission_id!)).split("\n").filter((l) => l && !l.startsWith(RESULT_MARK));
      expect(rayLines.length).toBeGreaterThan(5);
      for (const l of rayLines) expect(log).toContain(l.replace(/^\[(warn|error)\] /, "").replaceAll(token, "<lease token>"));
    }
    expect(log.filter((l) => l.startsWith("Ray entrypoint: train job"))).toHaveLength(3);

    // No step stored twice, and every step stored.
    expect(steps(runId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(metricSteps(runId, "rollout/success_rate")).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const trajCount = countRows("Trajectory", runId);
    expect(trajCount).toBe(8 * 2 * 4);
  }, 400_000);

  it("resubmits after `ray stop` took the whole head down mid-run, once the head is back", async () => {
    const { runId, jobId } = await launch("ray-head-stopped", { steps: 10 });
    const w = spawnWorker({ TURNLENS_RAY_ADDRESS: address, TURNLENS_RAY_POLL_MS: "250", TURNLENS_RAY_UNREACHABLE_MS: "120000" });
    await waitFor("step 2 stored", () => steps(runId).includes(2), 180_000, 50);
    const [first] = await submissionsOf(jobId);
    expect(first?.status, w.output()).toBe("RUNNING");
    execFileSync(RAY, ["stop", "--force"], { stdio: "pipe", timeout: 60_000 });
    // Ray's watcher kills the entrypoint's group once its supervisor is gone.
    await waitFor("the entrypoint to die with the head", () => pgrep(`workers/ray/entry.ts --job ${jobId}`).length === 0, 20_000, 100);
    await head.startAgain();

    await waitFor("run finished", () => finished(runId), 240_000, 200);
    const out = w.output();
    expect(getRun(runId).status, out).toBe("succeeded");
    // The new head knows only the resubmission.
    expect((await submissionsOf(jobId)).map((s) => s.status)).toEqual(["SUCCEEDED"]);
    const log = await jobLog(jobId);
    // the head's absence was ridden out (an unreachable API, or a 500 from a half-down dashboard)
    expect(
      log.some((l) => l.startsWith("Ray Jobs API ") && l.endsWith("; retrying for up to 120 s")),
      out,
    ).toBe(true);
    expect(
      log.some((l) => l.startsWith(`Ray job ${first.submission_id} is unknown to the Ray cluster (its head was restarted?): resubmitting`)),
      out,
    ).toBe(true);
    expect(
      log.filter((l) => /^resumed from the checkpoint of step \d+/.test(l)),
      out,
    ).toHaveLength(1);
    expect(steps(runId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(metricSteps(runId, "rollout/success_rate")).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  }, 400_000);

  it("runs two train jobs at once on one worker; a cancel stops its Ray job; a worker shutdown stops the other's and re-queues it", async () => {
    const a = await launch("ray-cancel", { steps: 500, checkpointInterval: 100 });
    const b = await launch("ray-shutdown", { steps: 500, checkpointInterval: 100 });
    const w = spawnWorker({ TURNLENS_RAY_ADDRESS: address, TURNLENS_RAY_POLL_MS: "250" }, ["--concurrency", "2"]);
    await waitFor("step 0 of both runs", () => steps(a.runId).includes(0) && steps(b.runId).includes(0), 240_000, 100);
    const [subA] = await submissionsOf(a.jobId);
    const [subB] = await submissionsOf(b.jobId);
    expect([subA?.status, subB?.status], w.output()).toEqual(["RUNNING", "RUNNING"]);
    const entry = pgrep(`workers/ray/entry.ts --job ${a.jobId}`);
    expect(entry).toHaveLength(1);
    const engines = entry.flatMap((pid) => childrenOf(pid, "workers.engine"));
    expect(engines.length).toBeGreaterThan(0);

    // Cancel from TurnLens: Ray stops the job, and it actually stops (the entrypoint and its engine are gone).
    const t0 = Date.now();
    await requestCancel(a.jobId);
    await waitFor("Ray to report STOPPED", async () => (await api.details(subA.submission_id!))?.status === "STOPPED", 60_000, 100);
    console.log(`ray-train: cancel -> Ray job STOPPED in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await waitFor("run canceled", () => finished(a.runId), 30_000, 100);
    expect(getRun(a.runId).status, w.output()).toBe("canceled");
    await waitFor("the entrypoint to exit", () => pgrep(`workers/ray/entry.ts --job ${a.jobId}`).length === 0, 10_000, 100);
    await waitFor("the engine to exit", () => !engines.some(alive), 10_000, 100);
    expect((await submissionsOf(a.jobId)).map((s) => s.status)).toEqual(["STOPPED"]);
    expect(await jobLog(a.jobId)).toEqual(expect.arrayContaining([`asked Ray to stop job ${subA.submission_id}`, "canceled"]));
    expect((await api.details(subB.submission_id!))?.status).toBe("RUNNING");

    // Worker shutdown (SIGTERM): the other Ray job is stopped and its job re-queued, its attempt given back.
    w.child.kill("SIGTERM");
    expect(await w.exited, w.output()).toEqual({ code: 0, signal: null });
    expect((await api.details(subB.submission_id!))?.status).toBe("STOPPED");
    expect(pgrep(`workers/ray/entry.ts --job ${b.jobId}`)).toEqual([]);
    const jobB = await getJob(b.jobId);
    expect([jobB.status, jobB.attempts]).toEqual(["queued", 0]);
  }, 400_000);
});
