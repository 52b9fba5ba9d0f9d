// The training job end to end with real worker processes and the real PyTorch engine, on a real
// SQLite file: what it stores is consistent with lib/credit, and it survives its faults
// (engine killed mid-run, worker killed, malformed engine output) without storing a step twice.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { alive, killAllWorkers, spawnWorker, useTempDatabase, waitFor, ROOT } from "../helpers/workers";

const db = useTempDatabase("train");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { countRows, runTrajectoryRows } = await import("../helpers/db-inspect");
const { runSteps } = await import("../../lib/db/credit");
const { readStepSummaries } = await import("../../lib/db/credit-summary");
const { storedStepSummary } = await import("../../lib/runs/credit-views");
const { listCheckpoints } = await import("../../lib/db/checkpoints");
const { metricSteps } = await import("../helpers/metric-rows");
const { getRun } = await import("../../lib/db/runs");
const { listSeries } = await import("../../lib/db/metric-series");
const { getTrajectory, listTrajectories } = await import("../../lib/db/rollouts");
const { runCredit } = await import("../../lib/credit");
const { readSeries } = await import("../../lib/db/metric-series");
const { createEnv } = await import("../../lib/envs/registry");
const { evalTasks, heldOutSet, trainTask } = await import("../../lib/envs/heldout");

afterEach(killAllWorkers);
afterAll(() => db.cleanup());

/** A small budget: 2 tasks x G=4 on the default FrozenLake, 4 steps, checkpoints every 2 (runs in seconds). */
async function launch(name: string, extra: Record<string, unknown> = {}) {
  const body = launchRunSchema.parse({
    jobKind: "train",
    name,
    config: { steps: 4, groupsPerStep: 2, groupSize: 4, evalInterval: 2, evalEpisodes: 8, checkpointInterval: 2, threads: 1, exportOnnx: true, ...extra },
  });
  return launchRun(body);
}

const steps = (runId: string) => runSteps(runId).map((s) => s.step);
const status = (runId: string) => getRun(runId).status;
const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(status(runId));
const childrenOf = (pid: number, pattern?: string) => {
  try {
    return execFileSync("pgrep", ["-P", String(pid), ...(pattern ? ["-f", pattern] : [])])
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};
/** The engine process of a worker's job (the worker's job process's child running `-m workers.engine`). */
const enginePid = (workerPid: number) => childrenOf(workerPid).flatMap((job) => childrenOf(job, "workers.engine"))[0] ?? null;

describe("train job", () => {
  it("stores every step, turn and advantage, consistent with lib/credit, and exports ONNX", async () => {
    // zero-advantage samples kept: the update runs (and stores its losses) even when none of the
    // 8 episodes of a step succeeds, which is common for an untrained policy on 6x6 maps
    const { runId } = await launch("consistency", { estimator: "gigpo", dropZeroAdvantage: false });
    const w = spawnWorker();
    await waitFor("run finished", () => finished(runId), 120_000, 200);
    expect(status(runId), w.output()).toBe("succeeded");
    expect(steps(runId)).toEqual([0, 1, 2, 3]);

    const keys = listSeries(runId).map((k) => k.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        "rollout/success_rate",
        "eval/greedy_success",
        "eval/train_overlap",
        "eval/heldout_instances",
        "losses/pg_loss",
        "losses/approx_kl",
        "losses/entropy",
        "losses/clip_frac",
        "losses/grad_norm",
        "credit/adv_std",
        "credit/anchor_singleton_ratio",
        "perf/env_steps_per_s",
        "perf/tokens_per_s",
      ]),
    );

    // Recompute the advantages of step 2 from what was stored: they must be what training used.
    const trajs = listTrajectories(runId, { step: 2, pageSize: 100 }).trajectories.map((t) => getTrajectory(t.id)!);
    const byUid = new Map<string, typeof trajs>();
    for (const t of trajs) byUid.set(t.uid, [...(byUid.get(t.uid) ?? []), t]);
    const credit = runCredit({
      estimator: "gigpo",
      params: {},
      groups: [...byUid].map(([uid, ts]) => ({
        uid,
        trajectories: ts
          .sort((a, b) => a.index - b.index)
          .map((t) => ({
            id: t.id,
            truncated: t.truncated,
            turns: t.turns.map((u) => ({ reward: u.reward, anchor: u.anchor!, invalid: !u.valid, tokens: u.tokenCount ?? 1 })),
          })),
      })),
    });
    const stored = new Map(trajs.map((t) => [t.id, t.turns.map((u) => u.advantage)]));
    expect(credit.trajectories).toHaveLength(8);
    for (const c of credit.trajectories)
      c.advantages.forEach((a, k) => {
        expect(stored.get(c.id)![k]).toBeCloseTo(a, 9);
      });

    // each step's credit summary is written with it (no credit view recomputes it), and is the one its rows give
    const metas = runSteps(runId);
    const kept = readStepSummaries(metas.map((m) => m.id));
    for (const m of metas) expect([m.step, kept.get(m.id)]).toEqual([m.step, storedStepSummary(m)]);

    const ckpts = listCheckpoints(runId);
    expect(ckpts.map((c) => c.step)).toEqual([1, 3]);
    expect(ckpts[1].onnxPath && fs.existsSync(ckpts[1].onnxPath)).toBeTruthy();
  }, 150_000);

  it("restarts a killed engine from the last checkpoint without storing a step twice", async () => {
    const { runId } = await launch("engine-killed", { steps: 6 });
    const w = spawnWorker();
    await waitFor("step 2 stored", () => steps(runId).includes(2), 120_000, 50);
    const pid = await waitFor("engine process", () => enginePid(w.pid), 10_000);
    process.kill(pid, "SIGKILL");
    await waitFor("run finished", () => finished(runId), 120_000, 200);
    expect(status(runId), w.output()).toBe("succeeded");
    expect(w.output()).toMatch(/engine died .*restarting it from the last checkpoint/);
    expect(w.output()).toMatch(/resumed from the checkpoint of step (1|3)/);
    expect(steps(runId)).toEqual([0, 1, 2, 3, 4, 5]);
    // Metric rows are unique per (key, step) by construction; the series must show each step once.
    const success = metricSteps(runId, "rollout/success_rate");
    expect(success).toEqual([0, 1, 2, 3, 4, 5]);
  }, 200_000);

  it("resumes on another worker after its worker is killed, without duplicated steps", async () => {
    const { runId } = await launch("worker-killed", { steps: 6 });
    const a = spawnWorker();
    await waitFor("step 2 stored", () => steps(runId).includes(2), 120_000, 50);
    const engine = await waitFor("engine process", () => enginePid(a.pid), 10_000);
    a.child.kill("SIGKILL");
    // the job process (and with its group, the engine) does not outlive its worker
    await waitFor("the engine to die with its worker", () => !alive(engine), 5_000, 20);
    const b = spawnWorker();
    await waitFor("run finished", () => finished(runId), 150_000, 200);
    expect(status(runId), b.output()).toBe("succeeded");
    expect(b.output()).toMatch(/resumed from the checkpoint of step (1|3)/);
    expect(steps(runId)).toEqual([0, 1, 2, 3, 4, 5]);
    const trajectories = runTrajectoryRows(runId);
    const turnsPerStep = new Map<number, number>();
    for (const t of trajectories) turnsPerStep.set(t.step, (turnsPerStep.get(t.step) ?? 0) + t.length);
    expect(turnsPerStep.size).toBe(6);
    const trajCount = countRows("Trajectory", runId);
    expect(trajCount).toBe(6 * 2 * 4);
    // The resumed worker drew the same tasks an uninterrupted run draws, none of them held out,
    // and every evaluation (before and after the resume) measured 0 training instances among its own.
    // one row a task group: its step, uid and task seed
    const seeds = [...new Map(trajectories.map((t) => [t.groupId, { step: t.step, uid: t.uid, taskSeed: t.taskSeed }])).values()];
    const env = createEnv("frozenlake");
    const held = heldOutSet("frozenlake", {}, 8);
    for (const r of seeds) {
      const g = Number(r.uid.split("-g")[1]);
      const t = trainTask(env, held, 0, r.step, g);
      expect(r.taskSeed).toBe(t.seed);
      expect(held.reserved.has(t.key)).toBe(false);
    }
    const overlap = readSeries(runId, "eval/train_overlap", { maxPoints: 1000 });
    expect(overlap.steps).toEqual([0, 2, 4, 6]);
    expect(overlap.values).toEqual([0, 0, 0, 0]);
    expect(readSeries(runId, "eval/heldout_instances", { maxPoints: 1000 }).values.every((v) => v === evalTasks(held, 8).length)).toBe(true);
  }, 200_000);

  it("fails with a clear error, without hanging, when the engine prints garbage", async () => {
    const fake = path.join(db.dir, "garbage-engine.sh");
    fs.writeFileSync(fake, `#!/bin/sh\nexec python3 "${path.join(ROOT, "test/engine/fixtures/fake_engine.py")}" garbage\n`, { mode: 0o755 });
    const { runId } = await launch("garbage");
    const t0 = Date.now();
    const w = spawnWorker({ TURNLENS_PYTHON: fake });
    await waitFor("run finished", () => finished(runId), 30_000, 100);
    expect(Date.now() - t0).toBeLessThan(30_000);
    const run = getRun(runId);
    expect(run.status, w.output()).toBe("failed");
    expect(run.error).toMatch(/engine/i);
    expect(run.error).toMatch(/not a protocol|not valid JSON|malformed|JSON/i);
    expect(steps(runId)).toEqual([]);
  }, 60_000);

  it("rejects a bad config at launch, naming the field, and stores nothing", async () => {
    const before = countRows("Run");
    await expect(launch("bad", { estimator: "nope" })).rejects.toThrow(/body\.config\.estimator/);
    await expect(launch("bad", { estimatorParams: { gamma: 7 } })).rejects.toThrow(/body\.config\.estimatorParams\.gamma/);
    expect(countRows("Run")).toBe(before);
  });
});
