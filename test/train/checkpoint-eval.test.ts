// The checkpoint-eval job end to end (real worker, real PyTorch engine, real database): a checkpoint
// of a tiny run and of a LoRA run (a small Hugging Face model built here from a config: nothing is
// downloaded) scores what the engine scores in-process with the same weights on the same tasks:
// the greedy success the train run stored when it evaluated those weights, and the very actions an
// in-process rollout over the loaded checkpoint takes. pass@k is recomputed from the stored samples.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor, ROOT } from "../helpers/workers";

const db = useTempDatabase("checkpoint-eval");
const { createRunWithJob, launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema, runListQuerySchema } = await import("../../lib/schemas/runs");
const { createRun, getRun, listRuns } = await import("../../lib/db/runs");
const { readSeries } = await import("../../lib/db/metric-series");
const { addCheckpoint, listCheckpoints } = await import("../../lib/db/checkpoints");
const { runJobRows, runTrajectoryRows } = await import("../helpers/db-inspect");
const { runSteps } = await import("../../lib/db/credit");
const { getTrajectory } = await import("../../lib/db/rollouts");
const { createEnv } = await import("../../lib/envs/registry");
const { evalTasks } = await import("../../lib/envs/heldout");
const { EngineClient } = await import("../../workers/engine-client");
const { engineGenerate, heldOutFor, parseTrainConfig, playHeldOut } = await import("../../workers/runners/policy-engine");
const { passAtK } = await import("../../workers/runners/eval-batches");

afterEach(killAllWorkers);
afterAll(() => db.cleanup());

const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(getRun(runId).status);
const series = (runId: string, key: string) => readSeries(runId, key, { maxPoints: 100_000 });
const valueAt = (runId: string, key: string, step: number) => {
  const s = series(runId, key);
  const i = s.steps.indexOf(step);
  if (i < 0) throw new Error(`${key} has no point at step ${step} (steps ${s.steps.join(", ")})`);
  return s.values[i];
};
const last = (runId: string, key: string) => series(runId, key).values.at(-1);
const jobResult = (runId: string) => JSON.parse(runJobRows(runId)[0].result!);

interface Played {
  actions: string[];
  /** per turn, the response's log-probability under the policy that played it: tells two checkpoints apart */
  logprobs: number[];
  success: boolean;
}

/** Every stored trajectory of a run, per task group uid, in order. */
function storedGroups(runId: string): Map<string, Played[]> {
  // by task group uid, then index (SQL order of the stored rows is not relied on)
  const rows = runTrajectoryRows(runId).sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0) || a.index - b.index);
  const out = new Map<string, Played[]>();
  for (const r of rows) {
    const turns = getTrajectory(r.id)!.turns;
    out.set(r.uid, [
      ...(out.get(r.uid) ?? []),
      { actions: turns.map((u) => u.action), logprobs: turns.map((u) => u.logprob ?? NaN), success: Boolean(r.success) },
    ]);
  }
  return out;
}

/** The greedy episodes, per held-out task, of an in-process rollout over the checkpoint's loaded weights. */
async function inProcessGreedy(trainRunId: string, step: number, episodes: number): Promise<Map<string, Played>> {
  const train = parseTrainConfig(getRun(trainRunId).config);
  const ckpt = listCheckpoints(trainRunId).find((c) => c.step === step)!;
  const engine = new EngineClient();
  try {
    await engine.load({ path: ckpt.torchPath, device: "cpu", threads: 1 });
    const tasks = evalTasks(heldOutFor(train), episodes).map((t, i) => ({ uid: `greedy-${i}`, taskSeed: t.seed }));
    const groups = await playHeldOut(train, () => createEnv(train.envId, train.envConfig), engineGenerate(engine, train, true, 0), tasks);
    return new Map(
      groups.map((g) => {
        const t = g.trajectories[0];
        return [g.uid, { actions: t.turns.map((u) => u.response), logprobs: t.turns.map((u) => u.logprobs.reduce((a, b) => a + b, 0)), success: t.success }];
      }),
    );
  } finally {
    await engine.close();
  }
}

async function runToEnd(runId: string, ms: number) {
  await waitFor(`run ${runId} finished`, () => finished(runId), ms, 200);
  const run = getRun(runId);
  expect(run.status, run.error ?? "").toBe("succeeded");
  return run;
}

/** The stored greedy episodes are the in-process ones: same actions, same success, same log-probabilities. */
function expectSameGreedy(stored: Map<string, Played[]>, ref: Map<string, Played>) {
  for (const [uid, r] of ref) {
    const s = stored.get(uid);
    expect(s?.length, uid).toBe(1);
    expect({ actions: s![0].actions, success: s![0].success }, uid).toEqual({ actions: r.actions, success: r.success });
    s![0].logprobs.forEach((lp, i) => {
      expect(lp, `${uid} turn ${i}`).toBeCloseTo(r.logprobs[i], 4);
    });
  }
}

/** Launches a checkpoint-eval of `trainRunId` and checks what every evaluation must store. */
async function evaluateCheckpoint(trainRunId: string, config: Record<string, unknown>) {
  const { runId } = await launchRun(launchRunSchema.parse({ jobKind: "checkpoint-eval", config: { sourceRunId: trainRunId, threads: 1, ...config } }));
  const run = await runToEnd(runId, 90_000);
  expect(run.parentRunId).toBe(trainRunId);
  expect(run.kind).toBe("eval");
  return runId;
}

/** The tiny training run of the first test (the resume test evaluates it again). */
let tinyRunId = "";

describe("checkpoint-eval job", () => {
  it("scores a tiny run's checkpoints as training scored them in-process: greedy success, actions, pass@k, overlap", async () => {
    const train = await launchRun(
      launchRunSchema.parse({
        jobKind: "train",
        name: "tiny",
        config: {
          envConfig: { size: 3, maxTurns: 8 },
          steps: 4,
          groupsPerStep: 2,
          groupSize: 4,
          evalInterval: 2,
          evalEpisodes: 12,
          lr: 3e-3,
          explorationEpsilon: 0.5,
          checkpointInterval: 2,
          threads: 1,
          exportOnnx: false,
        },
      }),
    );
    spawnWorker();
    await runToEnd(train.runId, 150_000);
    expect(listCheckpoints(train.runId).map((c) => c.step)).toEqual([1, 3]);
    tinyRunId = train.runId;

    // Step 1's checkpoint holds the weights training evaluated before step 2's update.
    const evalId = await evaluateCheckpoint(train.runId, {
      checkpointStep: 1,
      episodes: 12,
      episodesPerBatch: 6,
      sampled: true,
      k: 2,
      samples: 3,
      temperature: 1,
    });
    expect(series(evalId, "eval/greedy_success_cum").steps).toEqual([0, 1]);
    expect(last(evalId, "eval/greedy_success_cum")).toBe(valueAt(train.runId, "eval/greedy_success", 2));
    expect(last(evalId, "eval/episodes")).toBe(12);
    expect(series(evalId, "eval/train_overlap").values).toEqual([0, 0]);
    expect(last(evalId, "eval/checkpoint_step")).toBe(1);

    // Every turn is stored: the greedy episodes take the actions an in-process rollout takes.
    const stored = storedGroups(evalId);
    const ref = await inProcessGreedy(train.runId, 1, 12);
    expect(ref.size).toBe(12);
    expectSameGreedy(stored, ref);
    // ... which tells checkpoints apart: step 3's weights play the same tasks otherwise
    const other = await inProcessGreedy(train.runId, 3, 12);
    const differs = [...other].some(([uid, r]) => {
      const s = stored.get(uid)![0];
      return s.actions.join() !== r.actions.join() || r.logprobs.some((lp, i) => Math.abs(lp - s.logprobs[i]) > 1e-3);
    });
    expect(differs).toBe(true);

    // pass@2 from 3 samples per task, recomputed from the stored sampled episodes.
    const sampled = [...stored].filter(([uid]) => uid.startsWith("sampled-"));
    expect(sampled).toHaveLength(12);
    expect(sampled.every(([, ts]) => ts.length === 3 && ts.every((t) => t.actions.length > 0))).toBe(true);
    const passAt2 = sampled.reduce((a, [, ts]) => a + passAtK(3, ts.filter((t) => t.success).length, 2), 0) / 12;
    expect(last(evalId, "eval/pass_at_2_cum")).toBeCloseTo(passAt2, 12);
    const perSample = sampled.reduce((a, [, ts]) => a + ts.filter((t) => t.success).length, 0) / 36;
    expect(last(evalId, "eval/sample_success_rate_cum")).toBeCloseTo(perSample, 12);
    const result = jobResult(evalId);
    expect(result).toMatchObject({ checkpointStep: 1, tasks: 12, trainOverlap: 0, greedy: { tasks: 12 }, sampled: { tasks: 12, k: 2 } });
    expect(result.sampled.passAtK).toBeCloseTo(passAt2, 12);
    expect(typeof result.greedy.meanReturn).toBe("number");

    // No step given: the latest checkpoint (3), whose weights the final evaluation (stored at step 4) scored.
    const latest = await evaluateCheckpoint(train.runId, { episodes: 12, episodesPerBatch: 12 });
    expect(getRun(latest).config).toMatchObject({ checkpointStep: 3 });
    expect(last(latest, "eval/greedy_success_cum")).toBe(valueAt(train.runId, "eval/greedy_success", 4));
    expect(series(latest, "eval/pass_at_2_cum").values).toEqual([]);
  }, 300_000);

  it("resumes on another worker after its worker is killed: no batch stored twice, totals over every batch", async () => {
    expect(tinyRunId, "needs the tiny run of the first test").not.toBe("");
    const { runId } = await launchRun(
      launchRunSchema.parse({
        jobKind: "checkpoint-eval",
        config: { sourceRunId: tinyRunId, checkpointStep: 3, episodes: 12, episodesPerBatch: 2, sampled: true, k: 2, samples: 2, threads: 1 },
      }),
    );
    const steps = () => runSteps(runId).map((s) => s.step);
    const a = spawnWorker();
    await waitFor("a first batch stored", () => steps().length >= 1, 60_000, 20);
    a.child.kill("SIGKILL");
    const done = steps().length;
    expect(done).toBeLessThan(6);
    const b = spawnWorker();
    await runToEnd(runId, 90_000);
    expect(steps(), b.output()).toEqual([0, 1, 2, 3, 4, 5]);
    const stored = storedGroups(runId);
    expect(stored.size).toBe(24);
    expect([...stored.values()].every((ts) => ts.length === 1 || ts.length === 2)).toBe(true);
    // totals count the first worker's batches too
    expect(last(runId, "eval/episodes")).toBe(12);
    const greedy = [...stored].filter(([uid]) => uid.startsWith("greedy-")).map(([, ts]) => ts[0].success);
    expect(last(runId, "eval/greedy_success_cum")).toBeCloseTo(greedy.filter(Boolean).length / 12, 12);
    expect(last(runId, "eval/greedy_success_cum")).toBe(valueAt(tinyRunId, "eval/greedy_success", 4));
    const passAt2 =
      [...stored].filter(([uid]) => uid.startsWith("sampled-")).reduce((x, [, ts]) => x + passAtK(2, ts.filter((t) => t.success).length, 2), 0) / 12;
    expect(jobResult(runId).sampled.passAtK).toBeCloseTo(passAt2, 12);
  }, 200_000);

  it("scores a LoRA run's checkpoint (small Hugging Face model built here) as the engine does in-process", async () => {
    const model = path.join(db.dir, "hf-gpt2");
    const build = `import sys, pathlib; sys.path.insert(0, "test/engine"); import torch; torch.manual_seed(0); from conftest import build_hf_model; build_hf_model(pathlib.Path(sys.argv[1]), "gpt2")`;
    execFileSync(process.env.TURNLENS_PYTHON || "python3", ["-c", build, model], { cwd: ROOT, stdio: "pipe" });
    const train = await launchRun(
      launchRunSchema.parse({
        jobKind: "train",
        name: "lora",
        config: {
          envConfig: { size: 3, maxTurns: 8 },
          explorationEpsilon: 0.5,
          model: { kind: "hf", path: model, lora: { r: 4, alpha: 8 } },
          steps: 2,
          groupsPerStep: 2,
          groupSize: 2,
          evalInterval: 1,
          evalEpisodes: 8,
          checkpointInterval: 1,
          lr: 1e-2,
          threads: 1,
          exportOnnx: false,
        },
      }),
    );
    spawnWorker();
    await runToEnd(train.runId, 200_000);
    expect(listCheckpoints(train.runId).map((c) => c.step)).toEqual([0, 1]);

    const evalId = await evaluateCheckpoint(train.runId, { checkpointStep: 0, episodes: 8, episodesPerBatch: 8 });
    expect(last(evalId, "eval/greedy_success_cum")).toBe(valueAt(train.runId, "eval/greedy_success", 1));
    const stored = storedGroups(evalId);
    const ref = await inProcessGreedy(train.runId, 0, 8);
    expect(ref.size).toBe(8);
    expectSameGreedy(stored, ref);
    expect(jobResult(evalId)).toMatchObject({ checkpointStep: 0, trainOverlap: 0, sampled: null });
  }, 300_000);

  it("refuses a bad config at launch and in the job, naming the field", async () => {
    const base = await launchRun(launchRunSchema.parse({ jobKind: "baseline", config: { envId: "frozenlake", episodes: 4, groupSize: 1 } }));
    const launch = (config: Record<string, unknown>) => launchRun(launchRunSchema.parse({ jobKind: "checkpoint-eval", config }));
    const evalRuns = () => listRuns(runListQuerySchema.parse({ kind: "eval" })).total;
    const before = evalRuns();
    await expect(launch({ sourceRunId: "no-such-run" })).rejects.toThrow(/^body\.config\.sourceRunId: unknown run "no-such-run"/);
    await expect(launch({ sourceRunId: base.runId })).rejects.toThrow(/^body\.config\.sourceRunId: run \S+ is not a training run \(its job kind is baseline\)/);
    // a training run's record with checkpoints at steps 1 and 3 (no job: nothing trains here)
    const trainRun = (name: string) => createRun({ project: "default", name, kind: "train", jobKind: "train", config: {} }).runId;
    const fresh = trainRun("no-checkpoints-yet");
    await expect(launch({ sourceRunId: fresh })).rejects.toThrow(/^body\.config\.checkpointStep: run \S+ has no checkpoint yet/);
    const train = trainRun("two-checkpoints");
    addCheckpoint(train, 1, path.join(db.dir, "ckpt-1"), null, null);
    addCheckpoint(train, 3, path.join(db.dir, "ckpt-3"), null, null);
    await expect(launch({ sourceRunId: train, checkpointStep: 2 })).rejects.toThrow(
      /^body\.config\.checkpointStep: run \S+ has no checkpoint at step 2 \(its checkpoints: steps 1, 3\)/,
    );
    // nothing was created by the refused launches
    expect(evalRuns()).toBe(before);
    // the schema's own checks name their fields too
    expect(() => launchRunSchema.parse({ jobKind: "checkpoint-eval", config: { sourceRunId: train, sampled: true, k: 4, samples: 2 } })).toThrow(
      /samples[\s\S]*must be at least k \(4\)/,
    );
    expect(() => launchRunSchema.parse({ jobKind: "checkpoint-eval", config: { sourceRunId: train, greedy: false } })).toThrow(
      /sampled[\s\S]*pick greedy, sampled or both/,
    );

    // A job whose source vanished after launch fails with the same kind of message, naming the field.
    const { runId } = createRunWithJob(
      { project: "default", name: "orphan", kind: "eval", config: {}, envId: null, estimator: null, seed: 0, tags: [], notes: "", jobKind: "checkpoint-eval" },
      { kind: "checkpoint-eval", payload: { sourceRunId: "gone-run" } },
    );
    spawnWorker();
    await waitFor("orphan finished", () => finished(runId), 30_000, 100);
    expect(getRun(runId).status).toBe("failed");
    expect(getRun(runId).error).toMatch(/config\.sourceRunId: unknown run "gone-run"/);
  }, 120_000);
});
