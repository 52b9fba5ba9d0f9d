// checkpoint-eval on a Hugging Face checkpoint no TurnLens run made (real worker, real PyTorch
// engine, real database): a small GPT-2 saved here (nothing downloaded), and a LoRA adapter on it
// saved by peft as TRL or verl save one, each play FrozenLake's held-out tasks; the stored
// episodes are the engine's in-process greedy episodes of the same weights. Paths that are not
// such a directory fail naming config.checkpoint.path; a relative path is refused at launch.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor, ROOT } from "../helpers/workers";

const db = useTempDatabase("checkpoint-eval-outside");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { getRun } = await import("../../lib/db/runs");
const { readSeries } = await import("../../lib/db/metric-series");
const { runJobRows, runTrajectoryRows } = await import("../helpers/db-inspect");
const { getTrajectory } = await import("../../lib/db/rollouts");
const { createEnv } = await import("../../lib/envs/registry");
const { evalTasks } = await import("../../lib/envs/heldout");
const { EngineClient } = await import("../../workers/engine-client");
const { engineGenerate, heldOutFor, parseTrainConfig, playHeldOut } = await import("../../workers/runners/policy-engine");

afterEach(killAllWorkers);
afterAll(() => db.cleanup());

const python = process.env.TURNLENS_PYTHON || "python3";
const MODEL = path.join(db.dir, "gpt2");
const ADAPTER = path.join(db.dir, "gpt2-lora");
// the model as the engine tests build it, then an adapter with a random B (init_lora_weights=False) so it moves the policy
const BUILD = `
import sys, pathlib, torch
sys.path.insert(0, "test/engine")
from conftest import build_hf_model
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
torch.manual_seed(0)
model_dir, adapter_dir = pathlib.Path(sys.argv[1]), sys.argv[2]
build_hf_model(model_dir, "gpt2")
base = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True)
cfg = LoraConfig(r=4, lora_alpha=16, target_modules=["c_attn"], fan_in_fan_out=True, init_lora_weights=False, task_type="CAUSAL_LM")
get_peft_model(base, cfg).save_pretrained(adapter_dir)
`;
const OUTSIDE = { envId: "frozenlake", envConfig: { size: 3, maxTurns: 8 }, heldOutEpisodes: 8, instructions: false };
const EPISODES = 4;

const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(getRun(runId).status);
const last = (runId: string, key: string) => readSeries(runId, key, { maxPoints: 1000 }).values.at(-1);

/** Per held-out task uid: the greedy episode's actions and summed log-probs per turn. */
function stored(runId: string): Map<string, { actions: string[]; logprobs: number[] }> {
  return new Map(
    runTrajectoryRows(runId).map((r) => {
      const turns = getTrajectory(r.id)!.turns;
      return [r.uid, { actions: turns.map((u) => u.action), logprobs: turns.map((u) => u.logprob ?? Number.NaN) }];
    }),
  );
}

/** The same weights in an engine of this process (base, then base + adapter), playing the same tasks greedily. */
async function inProcess() {
  const { heldOutEpisodes, ...rest } = OUTSIDE;
  const train = parseTrainConfig({ ...rest, model: { kind: "hf", path: MODEL }, evalEpisodes: heldOutEpisodes });
  const tasks = evalTasks(heldOutFor(train), EPISODES).map((t, i) => ({ uid: `greedy-${i}`, taskSeed: t.seed }));
  const engine = new EngineClient();
  try {
    const out = [];
    for (const adapter of [null, ADAPTER]) {
      await engine.init({ model: MODEL, ...(adapter ? { adapter } : {}), tokenizer: { kind: "hf", path: MODEL }, device: "cpu", threads: 1 });
      const groups = await playHeldOut(train, () => createEnv(train.envId, train.envConfig), engineGenerate(engine, train, true, 0), tasks);
      out.push(
        new Map(
          groups.map((g) => [
            g.uid,
            { actions: g.trajectories[0].turns.map((u) => u.response), logprobs: g.trajectories[0].turns.map((u) => u.logprobs.reduce((a, b) => a + b, 0)) },
          ]),
        ),
      );
    }
    return out;
  } finally {
    await engine.close();
  }
}

const launch = (checkpoint: Record<string, unknown>) =>
  launchRun(launchRunSchema.parse({ jobKind: "checkpoint-eval", config: { checkpoint, episodes: EPISODES, episodesPerBatch: EPISODES, threads: 1 } }));

describe("checkpoint-eval of an outside Hugging Face checkpoint", () => {
  it("plays held-out tasks with a full model and with a LoRA adapter on it, as the engine does in-process", async () => {
    execFileSync(python, ["-c", BUILD, MODEL, ADAPTER], { cwd: ROOT, stdio: "pipe" });
    expect(JSON.parse(fs.readFileSync(path.join(ADAPTER, "adapter_config.json"), "utf8")).base_model_name_or_path).toBe(MODEL);
    const full = await launch({ ...OUTSIDE, path: MODEL });
    const lora = await launch({ ...OUTSIDE, path: ADAPTER });
    expect(getRun(full.runId)).toMatchObject({ kind: "eval", envId: "frozenlake", parentRunId: null, name: "checkpoint-eval-gpt2-frozenlake" });
    spawnWorker();
    for (const id of [full.runId, lora.runId]) {
      await waitFor(`run ${id} finished`, () => finished(id), 240_000, 250);
      expect(getRun(id).status, getRun(id).error ?? "").toBe("succeeded");
      expect(last(id, "eval/episodes")).toBe(EPISODES);
      expect(JSON.parse(runJobRows(id)[0].result!)).toMatchObject({ checkpointStep: null, trainOverlap: null, tasks: EPISODES, sampled: null });
      // no training run: no overlap to measure, none stored
      expect(readSeries(id, "eval/train_overlap", { maxPoints: 10 }).count).toBe(0);
    }
    const [wantFull, wantLora] = await inProcess();
    for (const [id, want] of [
      [full.runId, wantFull],
      [lora.runId, wantLora],
    ] as const) {
      const got = stored(id);
      expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
      for (const [uid, w] of want) {
        expect(got.get(uid)!.actions, uid).toEqual(w.actions);
        got.get(uid)!.logprobs.forEach((lp, i) => {
          expect(lp, `${uid} turn ${i}`).toBeCloseTo(w.logprobs[i], 4);
        });
      }
    }
    // the adapter is on: the same first turns have other log-probabilities than the base model's
    const first = (m: Map<string, { logprobs: number[] }>) => [...m.values()].map((x) => x.logprobs[0]);
    expect(Math.max(...first(wantFull).map((x, i) => Math.abs(x - first(wantLora)[i])))).toBeGreaterThan(1e-3);
  }, 300_000);

  it("fails a path that is not a checkpoint directory on the worker naming config.checkpoint.path, and refuses a relative one at launch", async () => {
    const empty = path.join(db.dir, "empty");
    fs.mkdirSync(empty, { recursive: true });
    const file = path.join(db.dir, "file.txt");
    fs.writeFileSync(file, "x");
    const brokenAdapter = path.join(db.dir, "adapter-without-base");
    fs.mkdirSync(brokenAdapter, { recursive: true });
    fs.writeFileSync(path.join(brokenAdapter, "adapter_config.json"), JSON.stringify({ base_model_name_or_path: "org/some-hub-model" }));
    const cases: [string, RegExp][] = [
      [path.join(db.dir, "missing"), /config\.checkpoint\.path: \S+missing does not exist on this worker/],
      [file, /config\.checkpoint\.path: \S+file\.txt is not a directory/],
      [empty, /config\.checkpoint\.path: \S+empty has neither config\.json \(a model\) nor adapter_config\.json/],
      [brokenAdapter, /config\.checkpoint\.path: the adapter's base model \(base_model_name_or_path "org\/some-hub-model"/],
    ];
    const ids: string[] = [];
    for (const [p] of cases) ids.push((await launch({ ...OUTSIDE, path: p })).runId);
    spawnWorker();
    for (const [i, [, error]] of cases.entries()) {
      await waitFor(`run ${ids[i]} finished`, () => finished(ids[i]), 60_000, 200);
      expect(getRun(ids[i])).toMatchObject({ status: "failed" });
      expect(getRun(ids[i]).error).toMatch(error);
    }
    const refused = (config: Record<string, unknown>) => launchRunSchema.safeParse({ jobKind: "checkpoint-eval", config });
    const paths = (r: ReturnType<typeof refused>) => (r.success ? [] : r.error.issues.map((i) => i.path.join(".")));
    expect(paths(refused({ checkpoint: { ...OUTSIDE, path: "models/gpt2" } }))).toEqual(["config.checkpoint.path"]);
    expect(paths(refused({ checkpoint: { ...OUTSIDE, path: "/models/../etc" } }))).toEqual(["config.checkpoint.path"]);
    expect(paths(refused({ checkpoint: { ...OUTSIDE, path: MODEL }, sourceRunId: "x" }))).toEqual(["config.sourceRunId"]);
    expect(paths(refused({}))).toEqual(["config.sourceRunId"]);
    await expect(launch({ ...OUTSIDE, envId: "nope", path: MODEL })).rejects.toThrow(/body\.config\.checkpoint\.envId: unknown environment/);
  }, 120_000);
});
