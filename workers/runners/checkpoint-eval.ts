// The `checkpoint-eval` job: any checkpoint of a training run (tiny transformer or Hugging Face
// model, LoRA or not), or a Hugging Face checkpoint directory no TurnLens run made (a full model,
// or a LoRA adapter on its base model: what verl or TRL saved), plays held-out tasks in the
// PyTorch engine, on the worker's GPU where it has one, else the CPU. Greedy: one episode per task, the most likely action each turn,
// scored exactly as training's own evaluation scores it (the same engine start-up, generate and
// rollout code: policy-engine.ts). Sampled: n episodes per task at a temperature, giving pass@k
// (unbiased estimator) and the per-sample success rate. Each batch of tasks is one stored step
// (groups `greedy-i` and `sampled-i`), so the run page shows every turn; a re-run skips the
// batches already stored and rebuilds its totals from them.
import fs from "node:fs";
import path from "node:path";
import { checkpointEvalConfigSchema, checkpointToEvaluate, type CheckpointEvalConfig, type OutsideCheckpoint } from "../../lib/schemas/runs";
import type { TrainConfig } from "../../lib/schemas/train";
import { errorKind, InvalidInputError } from "../../lib/schemas/errors";
import type { InitParams } from "../../lib/schemas/engine";
import { createEnv } from "../../lib/envs/registry";
import { mixSeed } from "../../lib/envs/rng";
import { evalTasks, overlapCount, trainingInstances } from "../../lib/envs/heldout";
import { toStoredGroup } from "../../lib/rollout/rollout";
import { getRun } from "../../lib/db/runs";
import { listCheckpoints, type CheckpointRow } from "../../lib/db/checkpoints";
import { stepExists } from "../../lib/db/rollouts";
import type { EngineClient } from "../engine-client";
import { assertEngineInstalled, engineGenerate, heldOutFor, parseTrainConfig, playHeldOut, withEngine, withEngineRestarts } from "./policy-engine";
import { passAtK, storedGroups, writeEvalBatch } from "./eval-batches";
import type { JobRunner } from "./types";

type Mode = "greedy" | "sampled";

/** One evaluated task of one mode: n episodes, c successes, their summed reward. */
export interface TaskScore {
  mode: Mode;
  index: number;
  n: number;
  c: number;
  reward: number;
}

/** What a set of task scores gives: greedy success, pass@k, per-sample success, mean returns. */
export function scoreTasks(scores: readonly TaskScore[], k: number) {
  const of = (m: Mode) => scores.filter((s) => s.mode === m);
  const sum = (xs: TaskScore[], f: (s: TaskScore) => number) => xs.reduce((a, s) => a + f(s), 0);
  const g = of("greedy");
  const s = of("sampled");
  return {
    greedy: g.length ? { tasks: g.length, success: sum(g, (x) => x.c) / sum(g, (x) => x.n), meanReturn: sum(g, (x) => x.reward) / sum(g, (x) => x.n) } : null,
    sampled: s.length
      ? {
          tasks: s.length,
          k,
          passAtK: sum(s, (x) => passAtK(x.n, x.c, k)) / s.length,
          successRate: sum(s, (x) => x.c) / sum(s, (x) => x.n),
          meanReturn: sum(s, (x) => x.reward) / sum(s, (x) => x.n),
        }
      : null,
  };
}

/** The run `id`, or null when there is none. */
function findRun(id: string) {
  try {
    return getRun(id);
  } catch (err) {
    if (errorKind(err) === "not_found") return null;
    throw err;
  }
}

/** The source training run, its config and the checkpoint the job names; errors name the config field. */
export function resolveSource(cfg: CheckpointEvalConfig): { source: NonNullable<ReturnType<typeof findRun>>; train: TrainConfig; ckpt: CheckpointRow } {
  const source = findRun(cfg.sourceRunId!);
  const ckpt = checkpointToEvaluate(cfg, source, source ? listCheckpoints(source.id) : [], "config");
  if (!fs.existsSync(ckpt.torchPath))
    throw new Error(`config.checkpointStep: the checkpoint of step ${ckpt.step} of run ${source!.id} is gone from disk (${ckpt.torchPath})`);
  return { source: source!, train: parseTrainConfig(source!.config), ckpt };
}

/** What a job evaluates: the policy's config (prompts, sampling, held-out set), how the engine gets it, and what training could have drawn. */
interface Target {
  train: TrainConfig;
  /** for the log: "checkpoint of step 9 of run x (...)" */
  label: string;
  /** the checkpoint's training step; null for an outside checkpoint */
  step: number | null;
  start: (engine: EngineClient) => ReturnType<EngineClient["load"]>;
  /** the instances training could draw up to the checkpoint; null: not known (an outside checkpoint) */
  trainKeys: ReadonlySet<string> | null;
}

function runTarget(cfg: CheckpointEvalConfig): Target {
  const { source, train, ckpt } = resolveSource(cfg);
  const heldOut = heldOutFor(train);
  return {
    train,
    label: `checkpoint of step ${ckpt.step} of run ${source.name} (${train.model.kind === "hf" ? `${train.model.path}${train.model.lora ? " + LoRA" : ""}` : "tiny transformer"})`,
    step: ckpt.step,
    start: (engine) => engine.load({ path: ckpt.torchPath, device: cfg.device, ...(cfg.threads ? { threads: cfg.threads } : {}) }),
    trainKeys: trainingInstances(train.envId, train.envConfig, heldOut, train.seed, ckpt.step + 1, train.groupsPerStep),
  };
}

/**
 * An outside Hugging Face checkpoint on this worker: a directory with config.json (a full model)
 * or adapter_config.json (a LoRA adapter whose base_model_name_or_path is a model directory here;
 * nothing is downloaded). Read, never run: the path only reaches stat and the engine's loaders.
 * Anything else fails naming config.checkpoint.path.
 */
export function resolveOutside(c: OutsideCheckpoint): { model: string; adapter: string | null; tokenizer: string } {
  const fail = (message: string): never => {
    throw new InvalidInputError(`config.checkpoint.path: ${message}`, [{ path: "config.checkpoint.path", message }]);
  };
  const isDir = (p: string) => fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
  const isFile = (p: string) => fs.statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
  if (!fs.existsSync(c.path)) fail(`${c.path} does not exist on this worker`);
  if (!isDir(c.path)) fail(`${c.path} is not a directory`);
  const adapterConfig = path.join(c.path, "adapter_config.json");
  if (isFile(adapterConfig)) {
    let base: unknown;
    try {
      base = (JSON.parse(fs.readFileSync(adapterConfig, "utf8")) as { base_model_name_or_path?: unknown }).base_model_name_or_path;
    } catch {
      fail(`${adapterConfig} is not valid JSON`);
    }
    if (typeof base !== "string" || !path.isAbsolute(base) || !isFile(path.join(base, "config.json")))
      fail(
        `the adapter's base model (base_model_name_or_path ${JSON.stringify(base ?? null)} in adapter_config.json) is not a model directory on this worker: it must be an absolute path with a config.json (nothing is downloaded)`,
      );
    // an adapter saved with its tokenizer (TRL does) brings the tokenizer it trained with
    const tokenizer = isFile(path.join(c.path, "tokenizer_config.json")) ? c.path : (base as string);
    return { model: base as string, adapter: c.path, tokenizer };
  }
  if (!isFile(path.join(c.path, "config.json"))) fail(`${c.path} has neither config.json (a model) nor adapter_config.json (a LoRA adapter)`);
  return { model: c.path, adapter: null, tokenizer: c.path };
}

function outsideTarget(cfg: CheckpointEvalConfig, c: OutsideCheckpoint): Target {
  const dir = resolveOutside(c);
  const train = parseTrainConfig({
    envId: c.envId,
    envConfig: c.envConfig,
    model: { kind: "hf", path: dir.model },
    evalEpisodes: c.heldOutEpisodes,
    instructions: c.instructions,
    device: cfg.device,
    threads: cfg.threads,
  });
  const init: InitParams = {
    model: dir.model,
    ...(dir.adapter ? { adapter: dir.adapter } : {}),
    tokenizer: { kind: "hf", path: dir.tokenizer },
    seed: cfg.seed,
    device: cfg.device,
    ...(cfg.threads ? { threads: cfg.threads } : {}),
  };
  return {
    train,
    label: `outside checkpoint ${c.path} (${dir.adapter ? `LoRA adapter on ${dir.model}` : "Hugging Face model"})`,
    step: null,
    start: (engine) => engine.init(init),
    trainKeys: null,
  };
}

export const checkpointEval: JobRunner = async (ctx) => {
  const cfg = checkpointEvalConfigSchema.parse(ctx.job.payload);
  const runId = ctx.job.runId;
  if (!runId) throw new Error("a checkpoint-eval job needs a runId");
  const target = cfg.checkpoint ? outsideTarget(cfg, cfg.checkpoint) : runTarget(cfg);
  const { train } = target;
  await assertEngineInstalled({ signal: ctx.signal, onSlow: (msg) => ctx.log(msg, "warn"), jobs: "checkpoint-eval jobs" });
  if (ctx.signal.aborted) return { stoppedAt: 0 };

  const n = cfg.samples ?? cfg.k;
  const temperature = cfg.temperature ?? train.temperature;
  const modes: Mode[] = [...(cfg.greedy ? (["greedy"] as const) : []), ...(cfg.sampled ? (["sampled"] as const) : [])];
  ctx.log(
    `${target.label} on ${train.envId}: ` +
      `${cfg.episodes} held-out tasks, ${modes.map((m) => (m === "greedy" ? "greedy" : `${n} samples at temperature ${temperature} (pass@${cfg.k})`)).join(" and ")}`,
  );
  // The held-out instances, and (a run's checkpoint) every instance its training drew up to this checkpoint.
  const heldOut = heldOutFor(train);
  const evalSet = evalTasks(heldOut, cfg.episodes);
  const overlap = target.trainKeys
    ? overlapCount(
        evalSet.map((t) => t.key),
        target.trainKeys,
      )
    : null;
  ctx.log(
    `held-out: ${evalSet.length} distinct instances${evalSet.length < cfg.episodes ? ` (the held-out set holds no more)` : ""}; ` +
      (target.step === null
        ? "what the checkpoint trained on is not known here (an outside checkpoint): no overlap measured"
        : `instances training could draw up to step ${target.step} (${target.step + 1} steps x ${train.groupsPerStep} tasks) among them: ${overlap}`),
    overlap ? "warn" : "info",
  );

  // What earlier attempts stored (their batches are skipped).
  const scores: TaskScore[] = storedGroups(runId).flatMap((g) => {
    const m = /^(greedy|sampled)-(\d+)$/.exec(g.uid);
    return m ? [{ mode: m[1] as Mode, index: Number(m[2]), n: g.n, c: g.c, reward: g.reward }] : [];
  });
  const batches = Math.ceil(evalSet.length / cfg.episodesPerBatch);
  const makeEnv = () => createEnv(train.envId, train.envConfig);

  const attempt = () =>
    withEngine(ctx, async (engine: EngineClient) => {
      const info = await target.start(engine);
      ctx.log(`engine: ${info.model} on ${info.device}, ${(info.num_params ?? 0).toLocaleString()} parameters, torch ${info.torch_version}`);
      for (let b = 0; b < batches; b++) {
        if (ctx.signal.aborted) return { stoppedAt: b };
        if (stepExists(runId, b)) continue;
        const t0 = performance.now();
        const tasks: { index: number; seed: number }[] = [];
        for (let i = b * cfg.episodesPerBatch; i < Math.min(evalSet.length, (b + 1) * cfg.episodesPerBatch); i++)
          tasks.push({ index: i, seed: evalSet[i].seed });
        const batch: TaskScore[] = [];
        const groups = [];
        for (const mode of modes) {
          const played = await playHeldOut(
            train,
            makeEnv,
            // greedy exactly as training's evaluation (seed 0, no exploration); samples seeded per batch and turn
            mode === "greedy"
              ? engineGenerate(engine, train, true, 0)
              : engineGenerate(engine, train, false, (call) => mixSeed(cfg.seed, "checkpoint-eval", b, call), 0, temperature),
            tasks.map((t) => ({ uid: `${mode}-${t.index}`, taskSeed: t.seed })),
            { groupSize: mode === "greedy" ? 1 : n, recordView: true, signal: ctx.signal },
          );
          if (ctx.signal.aborted) return { stoppedAt: b };
          played.forEach((g, j) => {
            batch.push({
              mode,
              index: tasks[j].index,
              n: g.trajectories.length,
              c: g.trajectories.filter((t) => t.success).length,
              reward: g.trajectories.reduce((a, t) => a + t.reward, 0),
            });
          });
          groups.push(...played.map((g) => toStoredGroup(g, train.envId)));
        }
        scores.push(...batch);
        const values = batchValues(scoreTasks(batch, cfg.k), scoreTasks(scores, cfg.k), cfg.k);
        const turns = groups.reduce((a, g) => a + g.trajectories.reduce((x, t) => x + t.turns.length, 0), 0);
        Object.assign(values, {
          "eval/episodes": new Set(scores.map((s) => s.index)).size,
          ...(overlap === null ? {} : { "eval/train_overlap": overlap }),
          "eval/heldout_instances": evalSet.length,
          ...(target.step === null ? {} : { "eval/checkpoint_step": target.step }),
          "perf/env_steps_per_s": turns / Math.max((performance.now() - t0) / 1000, 1e-6),
        });
        writeEvalBatch(ctx, runId, b, groups, values);
        ctx.log(`batch ${b + 1}/${batches}: ${describe(values, cfg.k)}`);
        await ctx.progress((b + 1) / batches, `${values["eval/episodes"]}/${evalSet.length} tasks · ${describe(values, cfg.k, "_cum")}`);
      }
      const total = scoreTasks(scores, cfg.k);
      const result = { checkpointStep: target.step, tasks: evalSet.length, ...total, trainOverlap: overlap };
      ctx.log(
        `done: ${target.label} on ${evalSet.length} held-out tasks: ${describe(batchValues(total, total, cfg.k), cfg.k, "_cum")}` +
          (overlap === null ? "" : ` (training instances among them: ${overlap})`),
      );
      return result;
    });
  return withEngineRestarts(ctx, attempt, "the batches it stored");
};

/** The curve values of one batch (`batch`) and so far (`cum`). */
function batchValues(batch: ReturnType<typeof scoreTasks>, cum: ReturnType<typeof scoreTasks>, k: number): Record<string, number> {
  const v: Record<string, number> = {};
  if (batch.greedy && cum.greedy) {
    v["eval/greedy_success"] = batch.greedy.success;
    v["eval/greedy_success_cum"] = cum.greedy.success;
    v["eval/greedy_return_mean_cum"] = cum.greedy.meanReturn;
  }
  if (batch.sampled && cum.sampled) {
    v[`eval/pass_at_${k}`] = batch.sampled.passAtK;
    v[`eval/pass_at_${k}_cum`] = cum.sampled.passAtK;
    v["eval/sample_success_rate_cum"] = cum.sampled.successRate;
    v["eval/sampled_return_mean_cum"] = cum.sampled.meanReturn;
  }
  return v;
}

function describe(v: Record<string, number>, k: number, suffix = ""): string {
  const parts: string[] = [];
  const g = v[`eval/greedy_success${suffix}`];
  const p = v[`eval/pass_at_${k}${suffix}`];
  if (g !== undefined) parts.push(`greedy success ${g.toFixed(3)}`);
  if (p !== undefined) parts.push(`pass@${k} ${p.toFixed(3)}`);
  return parts.join(", ");
}
