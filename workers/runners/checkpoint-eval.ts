// The `checkpoint-eval` job: any checkpoint of a training run (tiny transformer or Hugging Face
// model, LoRA or not) plays the run's held-out tasks in the PyTorch engine, on the worker's GPU
// where it has one, else the CPU. Greedy: one episode per task, the most likely action each turn,
// scored exactly as training's own evaluation scores it (the same engine start-up, generate and
// rollout code: policy-engine.ts). Sampled: n episodes per task at a temperature, giving pass@k
// (unbiased estimator) and the per-sample success rate. Each batch of tasks is one stored step
// (groups `greedy-i` and `sampled-i`), so the run page shows every turn; a re-run skips the
// batches already stored and rebuilds its totals from them.
import fs from "node:fs";
import { checkpointEvalConfigSchema, checkpointToEvaluate, type CheckpointEvalConfig } from "../../lib/schemas/runs";
import type { TrainConfig } from "../../lib/schemas/train";
import { errorKind } from "../../lib/schemas/errors";
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
  const source = findRun(cfg.sourceRunId);
  const ckpt = checkpointToEvaluate(cfg, source, source ? listCheckpoints(source.id) : [], "config");
  if (!fs.existsSync(ckpt.torchPath))
    throw new Error(`config.checkpointStep: the checkpoint of step ${ckpt.step} of run ${source!.id} is gone from disk (${ckpt.torchPath})`);
  return { source: source!, train: parseTrainConfig(source!.config), ckpt };
}

export const checkpointEval: JobRunner = async (ctx) => {
  const cfg = checkpointEvalConfigSchema.parse(ctx.job.payload);
  const runId = ctx.job.runId;
  if (!runId) throw new Error("a checkpoint-eval job needs a runId");
  const { source, train, ckpt } = resolveSource(cfg);
  await assertEngineInstalled({ signal: ctx.signal, onSlow: (msg) => ctx.log(msg, "warn"), jobs: "checkpoint-eval jobs" });
  if (ctx.signal.aborted) return { stoppedAt: 0 };

  const n = cfg.samples ?? cfg.k;
  const temperature = cfg.temperature ?? train.temperature;
  const modes: Mode[] = [...(cfg.greedy ? (["greedy"] as const) : []), ...(cfg.sampled ? (["sampled"] as const) : [])];
  ctx.log(
    `checkpoint of step ${ckpt.step} of run ${source.name} (${train.model.kind === "hf" ? `${train.model.path}${train.model.lora ? " + LoRA" : ""}` : "tiny transformer"}) on ${train.envId}: ` +
      `${cfg.episodes} held-out tasks, ${modes.map((m) => (m === "greedy" ? "greedy" : `${n} samples at temperature ${temperature} (pass@${cfg.k})`)).join(" and ")}`,
  );
  // The source run's held-out instances, and every instance its training drew up to this checkpoint.
  const heldOut = heldOutFor(train);
  const evalSet = evalTasks(heldOut, cfg.episodes);
  const trainKeys = trainingInstances(train.envId, train.envConfig, heldOut, train.seed, ckpt.step + 1, train.groupsPerStep);
  const overlap = overlapCount(
    evalSet.map((t) => t.key),
    trainKeys,
  );
  ctx.log(
    `held-out: ${evalSet.length} distinct instances${evalSet.length < cfg.episodes ? ` (the source run holds out no more)` : ""}; instances training could draw up to step ${ckpt.step} (${ckpt.step + 1} steps x ${train.groupsPerStep} tasks) among them: ${overlap}`,
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
      const info = await engine.load({ path: ckpt.torchPath, device: cfg.device, ...(cfg.threads ? { threads: cfg.threads } : {}) });
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
          "eval/train_overlap": overlap,
          "eval/heldout_instances": evalSet.length,
          "eval/checkpoint_step": ckpt.step,
          "perf/env_steps_per_s": turns / Math.max((performance.now() - t0) / 1000, 1e-6),
        });
        writeEvalBatch(ctx, runId, b, groups, values);
        ctx.log(`batch ${b + 1}/${batches}: ${describe(values, cfg.k)}`);
        await ctx.progress((b + 1) / batches, `${values["eval/episodes"]}/${evalSet.length} tasks · ${describe(values, cfg.k, "_cum")}`);
      }
      const total = scoreTasks(scores, cfg.k);
      const result = { checkpointStep: ckpt.step, tasks: evalSet.length, ...total, trainOverlap: overlap };
      ctx.log(
        `done: checkpoint of step ${ckpt.step} on ${evalSet.length} held-out tasks: ${describe(batchValues(total, total, cfg.k), cfg.k, "_cum")} (training instances among them: ${overlap})`,
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
