// The `train` job: multi-turn RL of a policy on a lib/envs environment, credit assigned by the
// estimator the researcher picked (lib/credit, the one implementation), PPO updates in the
// PyTorch engine (workers/engine). Every trajectory and turn is stored with the advantage used.
//
// Each step:  rollout (one generate call per turn across all G x groups episodes)
//          -> the step as stored, built once -> lib/credit on its turns, keyed by trajectory id
//          -> the stored turns' advantages and the PPO samples from that one result
//          -> engine.update (PPO-clip) -> the step, its summary and its metrics stored together
// Resuming: a re-run (worker lost) or an engine restart (engine died) loads the last checkpoint and
// forgets whatever was stored after it, so no step is ever stored twice.
import fs from "node:fs";
import path from "node:path";
import { tinyInitShape, updateKnobsOf, type TrainConfig } from "../../lib/schemas/train";
import { createEnv } from "../../lib/envs/registry";
import { playEpisode } from "../../lib/envs/play";
import { randomAction } from "../../lib/envs/random-policy";
import { createRng, mixSeed } from "../../lib/envs/rng";
import { evalTasks, overlapCount, trainTask, type HeldOutSet } from "../../lib/envs/heldout";
import type { Env } from "../../lib/envs/types";
import { getEstimator, runCredit, type CreditResponse, type TrajectoryCredit } from "../../lib/credit";
import { creditTurn } from "../../lib/schemas/credit";
import { buildPrompt, newContext, advanceContext } from "../../lib/rollout/context";
import { providersFor } from "./turn-inputs";
import { rollout, rolloutTrajectoryId, toStoredGroup, withCredit, type Generate, type RolloutGroup } from "../../lib/rollout/rollout";
import type { RolloutStepInput } from "../../lib/schemas/rollouts";
import { summarizeStepInput } from "../../lib/schemas/step-summary";
import { writeRolloutStep } from "../../lib/db/rollouts";
import type { MetricPoint } from "../../lib/db/metric-points";
import { writeMetrics } from "../../lib/db/metric-writes";
import { evaluateRunAlerts } from "../../lib/db/alerts";
import { addCheckpoint, latestCheckpoint, truncateRunAfter } from "../../lib/db/checkpoints";
import { writeTransaction } from "../../lib/db/raw";
import { projectRoot } from "../../lib/db/url";
import type { EngineClient, InitParams, UpdateSample } from "../engine-client";
import { assertEngineInstalled, engineGenerate, evaluate, heldOutFor, parseTrainConfig, withEngine, withEngineRestarts } from "./policy-engine";
import type { JobContext, JobRunner } from "./types";

// The engine start-up, restarts, generate and evaluation live in policy-engine.ts (checkpoint-eval
// shares them); these names stay importable from here.
export { assertEngineInstalled, ENGINE_INSTALL_COMMAND, EngineNotInstalledError, engineRequirements, heldOutFor, parseTrainConfig } from "./policy-engine";

interface TrainerState {
  /** environment steps taken so far (x-axis choice on the run page) */
  envSteps: number;
  lr: number;
  lrDecayed: boolean;
}

export const train: JobRunner = async (ctx) => {
  const cfg = parseTrainConfig(ctx.job.payload);
  const runId = ctx.job.runId;
  if (!runId) throw new Error("a train job needs a runId");
  // Before anything is spawned or stored: a machine without the engine fails in a second, saying how to install it.
  await assertEngineInstalled({ signal: ctx.signal, onSlow: (msg) => ctx.log(msg, "warn") });
  if (ctx.signal.aborted) return { stoppedAt: 0 };
  return withEngineRestarts(ctx, () => trainAttempt(ctx, runId, cfg));
};

/** What the phases of one attempt share: the job, its engine, the environments and the held-out set. */
interface Trainer {
  ctx: JobContext;
  engine: EngineClient;
  runId: string;
  runDir: string;
  cfg: TrainConfig;
  makeEnv: () => Env;
  /** an environment instance for its instructions */
  probe: Env;
  heldOut: HeldOutSet;
  evalSet: ReturnType<typeof evalTasks>;
  /** instances training has drawn so far (a resumed run replays the draws of the steps before it) */
  trained: Set<string>;
  /** the environment instance training tasks are drawn with */
  taskEnv: Env;
  state: TrainerState;
  /** the greedy success of the last evaluation (null before the first) */
  lastEval: number | null;
}

type TrainResult = Record<string, unknown>;

async function trainAttempt(ctx: JobContext, runId: string, cfg: TrainConfig): Promise<TrainResult> {
  const runDir = path.join(projectRoot(), "data", "runs", runId);
  fs.mkdirSync(runDir, { recursive: true });
  return withEngine(ctx, async (engine) => {
    const makeEnv = () => createEnv(cfg.envId, cfg.envConfig);
    const heldOut = heldOutFor(cfg);
    const t: Trainer = {
      ctx,
      engine,
      runId,
      runDir,
      cfg,
      makeEnv,
      probe: makeEnv(),
      heldOut,
      evalSet: evalTasks(heldOut, cfg.evalEpisodes),
      trained: new Set(),
      taskEnv: makeEnv(),
      state: { envSteps: 0, lr: cfg.lr, lrDecayed: false },
      lastEval: null,
    };
    const start = await startOrResume(t);
    for (let step = start; step < cfg.steps; step++) {
      if (ctx.signal.aborted) return { stoppedAt: step };
      const t0 = performance.now();
      const values: Record<string, number> = {};
      // evaluation on held-out tasks (greedy), before this step's update
      if (step % cfg.evalInterval === 0) {
        const stopped = await evaluateBeforeStep(t, step, values);
        if (stopped) return stopped;
      }
      await trainStep(t, step, values, t0);
    }
    const values: Record<string, number> = {};
    const final = await evaluateHeldOut(t, values);
    writeStepMetrics(ctx, runId, cfg.steps, values);
    ctx.log(`done: greedy success on ${t.evalSet.length} held-out tasks ${final.toFixed(3)}; training instances among them: ${values["eval/train_overlap"]}`);
    return { steps: cfg.steps, greedySuccess: final, trainOverlap: values["eval/train_overlap"] };
  });
}

/** This step's training tasks, remembered as drawn (evaluation reports its overlap with them). */
function drawTasks(t: Trainer, step: number): { uid: string; taskSeed: number }[] {
  return Array.from({ length: t.cfg.groupsPerStep }, (_, g) => {
    const task = trainTask(t.taskEnv, t.heldOut, t.cfg.seed, step, g);
    t.trained.add(task.key);
    return { uid: `s${step}-g${g}`, taskSeed: task.seed };
  });
}

/** The first step to train: after the last checkpoint (its weights and trainer state loaded), else 0 on a new engine. */
async function startOrResume(t: Trainer): Promise<number> {
  const { ctx, cfg, engine, runId, heldOut } = t;
  const ckpt = latestCheckpoint(runId);
  let start = 0;
  if (ckpt) {
    await engine.load({ path: ckpt.torchPath, device: cfg.device, ...(cfg.threads ? { threads: cfg.threads } : {}) });
    Object.assign(t.state, JSON.parse(fs.readFileSync(path.join(ckpt.torchPath, "trainer-state.json"), "utf8")));
    const { steps } = truncateRunAfter(runId, ckpt.step, ctx.fence);
    start = ckpt.step + 1;
    ctx.log(`resumed from the checkpoint of step ${ckpt.step}${steps ? `; dropped ${steps} later step(s) stored before the interruption` : ""}`);
    for (let s = 0; s < start; s++) drawTasks(t, s);
  } else {
    truncateRunAfter(runId, -1, ctx.fence); // a previous attempt that died before its first checkpoint
    const info = await engine.init(initParams(cfg, t.probe, t.makeEnv));
    ctx.log(`engine: ${info.model} on ${info.device}, ${(info.num_params ?? 0).toLocaleString()} parameters, torch ${info.torch_version}`);
  }
  ctx.log(
    heldOut.disjoint
      ? `held-out set: ${t.evalSet.length} distinct instances evaluated, ${heldOut.reserved.size} reserved (never trained on)`
      : `held-out set: this config has ${heldOut.distinctSeen} distinct instance(s), so nothing can be held out; evaluation plays training instances`,
    heldOut.disjoint ? "info" : "warn",
  );
  return start;
}

/** One generate call per turn; training rollouts (epsilon > 0) explore, evaluation is greedy. */
function generate(t: Trainer, greedy: boolean, seed: number | ((call: number) => number), epsilon = 0): Generate {
  return engineGenerate(t.engine, t.cfg, greedy, seed, epsilon);
}

/** Greedy success on the held-out instances, and how many of them training has drawn (0 unless nothing can be held out). */
async function evaluateHeldOut(t: Trainer, values: Record<string, number>): Promise<number> {
  const success = await evaluate(t.cfg, t.makeEnv, generate(t, true, 0), t.evalSet);
  values["eval/greedy_success"] = success;
  values["eval/train_overlap"] = overlapCount(
    t.evalSet.map((e) => e.key),
    t.trained,
  );
  values["eval/heldout_instances"] = t.evalSet.length;
  return success;
}

/**
 * The evaluation before a step's update: halves the learning rate once it reaches lrDecayAfter,
 * and ends the run (metrics and a checkpoint stored) once it reaches targetSuccess.
 */
async function evaluateBeforeStep(t: Trainer, step: number, values: Record<string, number>): Promise<TrainResult | null> {
  const { ctx, cfg, state } = t;
  const success = await evaluateHeldOut(t, values);
  t.lastEval = success;
  ctx.log(
    `step ${step}: greedy success ${success.toFixed(3)} on ${t.evalSet.length} held-out instances; training instances among them: ${values["eval/train_overlap"]}`,
  );
  if (!state.lrDecayed && cfg.lrDecayAfter > 0 && success >= cfg.lrDecayAfter) {
    state.lr = cfg.lr / 2;
    state.lrDecayed = true;
    ctx.log(`greedy success ${success.toFixed(3)} >= ${cfg.lrDecayAfter}: learning rate halved to ${state.lr}`);
  }
  if (cfg.targetSuccess === null || success < cfg.targetSuccess) return null;
  ctx.log(`target reached: greedy success ${success.toFixed(3)} >= ${cfg.targetSuccess} at step ${step}`);
  writeStepMetrics(ctx, t.runId, step, values);
  await saveCheckpoint(t, step, cfg.exportOnnx && cfg.model.kind === "tiny");
  return { step, greedySuccess: success, stoppedEarly: true };
}

/** One training step: rollouts, credit, the PPO update, then the step and its metrics stored in one transaction. */
async function trainStep(t: Trainer, step: number, values: Record<string, number>, t0: number): Promise<void> {
  const { ctx, cfg, engine, runId } = t;
  const tRoll = performance.now();
  const groups = await rollout({
    makeEnv: t.makeEnv,
    tasks: drawTasks(t, step),
    groupSize: cfg.groupSize,
    context: cfg.context,
    instructions: cfg.instructions,
    restrictToAdmissible: cfg.restrictToAdmissible,
    recordView: true,
    generate: generate(t, false, rolloutSeeds(cfg.seed, step), cfg.explorationEpsilon),
    signal: ctx.signal,
  });
  const rollSecs = (performance.now() - tRoll) / 1000;
  for (const p of providersFor(getEstimator(cfg.estimator).needs)) await p.fill({ engine, cfg, probe: t.probe }, groups);
  const { stored, credit, creditOf } = creditedStep(cfg, step, groups);
  const samples = ppoSamples(cfg, groups, creditOf);
  const tUpd = performance.now();
  if (samples.length) Object.assign(values, await ppoUpdate(engine, cfg, t.state.lr, samples));
  const updSecs = (performance.now() - tUpd) / 1000;

  Object.assign(values, rolloutMetrics(groups, credit, samples.length));
  const turns = values["rollout/turns"];
  t.state.envSteps += turns;
  const secs = (performance.now() - t0) / 1000;
  values["perf/env_steps"] = t.state.envSteps;
  values["perf/env_steps_per_s"] = turns / Math.max(rollSecs, 1e-6);
  values["perf/tokens_per_s"] = values["rollout/response_tokens"] / Math.max(rollSecs, 1e-6);
  values["perf/rollout_seconds"] = rollSecs;
  values["perf/update_seconds_total"] = updSecs;
  values["perf/step_seconds"] = secs;
  writeTransaction(
    ctx.fence,
    () => {
      writeRolloutStep(runId, stored, null, undefined, { summary: summarizeStepInput(stored) });
      writeStepMetrics(null, runId, step, values);
    },
    undefined,
    { runId },
  );
  const evalNote = t.lastEval !== null ? `, greedy eval ${t.lastEval.toFixed(3)}` : "";
  ctx.log(
    `step ${step + 1}/${cfg.steps}: success ${values["rollout/success_rate"].toFixed(3)}, return ${values["rollout/return_mean"].toFixed(3)}${evalNote}, ${samples.length} samples, ${secs.toFixed(2)} s`,
  );
  if ((step + 1) % cfg.checkpointInterval === 0 || step === cfg.steps - 1)
    await saveCheckpoint(t, step, step === cfg.steps - 1 && cfg.exportOnnx && cfg.model.kind === "tiny");
  await ctx.progress((step + 1) / cfg.steps, `step ${step + 1}/${cfg.steps}` + (t.lastEval !== null ? ` · greedy success ${t.lastEval.toFixed(2)}` : ""));
}

/**
 * A step as it is stored, built once: its groups with the credit of lib/credit (the same code the
 * heatmaps and the CLI use) run on the turns as stored, so the credit views recompute the same.
 * Credit is keyed by trajectory id; `creditOf` finds a trajectory's.
 */
function creditedStep(cfg: TrainConfig, step: number, groups: RolloutGroup[]) {
  const plain = groups.map((g) => toStoredGroup(g, cfg.envId));
  const credit = runCredit({
    estimator: cfg.estimator,
    params: cfg.estimatorParams,
    groups: plain.map((g) => ({
      uid: g.uid,
      trajectories: g.trajectories.map((t, j) => ({ id: rolloutTrajectoryId(g.uid, j), truncated: t.truncated, turns: t.turns.map(creditTurn) })),
    })),
  });
  const byId = new Map(credit.trajectories.map((c) => [c.id, c]));
  const creditOf = (id: string): TrajectoryCredit => {
    const c = byId.get(id);
    if (!c) throw new Error(`credit has no trajectory ${id}`);
    return c;
  };
  const stored: RolloutStepInput = {
    step,
    estimator: cfg.estimator,
    params: cfg.estimatorParams,
    diagnostics: credit.diagnostics as unknown as Record<string, unknown>,
    groups: plain.map((g) => withCredit(g, creditOf)),
  };
  return { stored, credit, creditOf };
}

/** The PPO batch: a sample per turn that produced tokens, with its trajectory's credit for that turn (zero advantages dropped when configured). */
function ppoSamples(cfg: TrainConfig, groups: RolloutGroup[], creditOf: (id: string) => TrajectoryCredit): UpdateSample[] {
  const samples: UpdateSample[] = [];
  for (const g of groups)
    g.trajectories.forEach((t, j) => {
      const adv = creditOf(rolloutTrajectoryId(g.uid, j)).advantages;
      t.turns.forEach((u, k) => {
        if (u.responseIds.length === 0 || (cfg.dropZeroAdvantage && adv[k] === 0)) return;
        samples.push({
          prompt_ids: u.promptIds,
          response_ids: u.responseIds,
          advantages: adv[k],
          old_logprobs: u.logprobs,
          ...(u.allowed ? { allowed: u.allowed } : {}),
        });
      });
    });
  return samples;
}

/** The PPO update in the engine at learning rate `lr`; its finite metrics. */
async function ppoUpdate(engine: EngineClient, cfg: TrainConfig, lr: number, samples: UpdateSample[]): Promise<Record<string, number>> {
  const upd = await engine.update({ samples, ...updateKnobsOf(cfg), lr });
  const values: Record<string, number> = {};
  for (const [k, v] of Object.entries(upd.metrics)) if (typeof v === "number" && Number.isFinite(v)) values[k] = v;
  return values;
}

/**
 * The sampling seed of each generate call (one a turn) of a step's rollouts: distinct for every
 * (run seed, step, turn), the same on a rerun. One seed for every turn of a step replays the same
 * draws turn after turn, so an untrained policy repeats one move for a whole episode.
 */
export function rolloutSeeds(seed: number, step: number): (call: number) => number {
  return (call) => mixSeed(seed, "sample", step, call);
}

function initParams(cfg: TrainConfig, probe: Env, makeEnv: () => Env): InitParams {
  const common = { optimizer: { lr: cfg.lr }, kl_coef: cfg.klCoef, seed: cfg.seed, device: cfg.device, ...(cfg.threads ? { threads: cfg.threads } : {}) };
  if (cfg.model.kind === "hf") return { ...common, model: cfg.model.path, tokenizer: { kind: "hf" }, lora: cfg.model.lora };
  return {
    ...common,
    model: "tiny",
    tiny: tinyInitShape(cfg.model),
    tokenizer: { kind: cfg.model.tokenizer, corpus: tokenizerCorpus(cfg, probe, makeEnv) },
  };
}

/** The text a tiny model will ever see, from random episodes: its tokenizer's vocabulary. */
function tokenizerCorpus(cfg: TrainConfig, probe: Env, makeEnv: () => Env): string[] {
  const corpus = new Set<string>();
  const env = makeEnv();
  for (let i = 0; i < 64; i++) {
    const rng = createRng(mixSeed(cfg.seed, "corpus", i));
    const ctx = newContext();
    const ep = playEpisode(env, mixSeed(cfg.seed, "corpus-task", i), (e) => randomAction(e, rng), { recordView: false });
    for (const t of ep.turns) {
      corpus.add(buildPrompt(cfg.context, ctx, t.observation, { instructions: cfg.instructions ? probe.instructions() : null }));
      corpus.add(t.action);
      advanceContext(cfg.context, ctx, t.observation, t.action);
    }
    for (const a of env.admissibleActions() ?? []) corpus.add(a);
  }
  return [...corpus];
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

function rolloutMetrics(groups: RolloutGroup[], credit: CreditResponse, samples: number): Record<string, number> {
  const trajs = groups.flatMap((g) => g.trajectories);
  const turns = trajs.flatMap((t) => t.turns);
  const advs = credit.trajectories.flatMap((t) => t.advantages);
  const d = credit.diagnostics;
  const out: Record<string, number> = {
    "rollout/success_rate": mean(trajs.map((t) => (t.success ? 1 : 0))),
    "rollout/return_mean": mean(trajs.map((t) => t.reward)),
    "rollout/length_mean": mean(trajs.map((t) => t.turns.length)),
    "rollout/invalid_action_rate": mean(turns.map((u) => (u.valid ? 0 : 1))),
    "rollout/turns": turns.length,
    "rollout/response_tokens": turns.reduce((s, u) => s + u.responseIds.length, 0),
    "credit/adv_mean": d.advantage.mean,
    "credit/adv_std": d.advantage.std,
    "credit/adv_min": d.advantage.min,
    "credit/adv_max": d.advantage.max,
    "credit/nonzero_adv_share": mean(advs.map((a) => (a !== 0 ? 1 : 0))),
    "credit/zero_variance_group_share": d.groups.zeroVarianceShare,
    "credit/samples": samples,
  };
  if (d.anchorGroups) {
    out["credit/anchor_groups"] = d.anchorGroups.count;
    out["credit/anchor_singleton_ratio"] = d.anchorGroups.singletonRatio;
    out["credit/anchor_mean_abs_step_adv"] = d.anchorGroups.meanAbsStep;
  }
  return out;
}

function writeStepMetrics(ctx: JobContext | null, runId: string, step: number, values: Record<string, number>): void {
  const now = Date.now() / 1000;
  const points: MetricPoint[] = Object.entries(values)
    .filter(([, v]) => Number.isFinite(v))
    .map(([key, value]) => ({ key, step, value, wallTime: now }));
  writeMetrics(runId, points, ctx ? ctx.fence : null);
  // the project's alert rules over what this step stored (docs/alerts.md); never fails the step
  try {
    evaluateRunAlerts(runId);
  } catch (e) {
    console.error(`train: alert rules of run ${runId} could not be evaluated (${(e as Error).message})`);
  }
}

async function saveCheckpoint(t: Trainer, step: number, exportOnnx: boolean): Promise<void> {
  const { ctx, engine, runId, runDir, state } = t;
  const dir = path.join(runDir, `ckpt-${String(step).padStart(6, "0")}`);
  await engine.save({ path: dir });
  fs.writeFileSync(path.join(dir, "trainer-state.json"), JSON.stringify(state));
  let onnx: string | null = null;
  if (exportOnnx) {
    const r = await engine.exportOnnx({ path: path.join(runDir, "onnx", "policy.onnx"), verify: true });
    onnx = r.path;
    ctx.log(`exported ONNX policy to ${r.path} (max |logit diff| vs torch ${r.max_abs_diff})`);
  }
  addCheckpoint(runId, step, dir, onnx, ctx.fence);
}
