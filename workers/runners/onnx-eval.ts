// The `onnx-eval` job: a trained run's exported ONNX policy plays K held-out tasks in
// onnxruntime-node (no Python, no PyTorch), greedily, through the same rollout loop and context
// strategy as training. The stored trajectories and curves are an evaluation run of their own.
import path from "node:path";
import { onnxEvalConfigSchema } from "../../lib/schemas/runs";
import { createEnv } from "../../lib/envs/registry";
import { rollout, toStoredGroup } from "../../lib/rollout/rollout";
import { OnnxPolicy } from "../../lib/policy/onnx-policy";
import { getRun } from "../../lib/db/runs";
import { listCheckpoints } from "../../lib/db/checkpoints";
import { stepExists } from "../../lib/db/rollouts";
import { evalTasks, overlapCount, trainingInstances } from "../../lib/envs/heldout";
import { heldOutFor, parseTrainConfig } from "./policy-engine";
import { storedTotals, storeEvalBatch, summary } from "./eval-batches";
import type { JobRunner } from "./types";

export const onnxEval: JobRunner = async (ctx) => {
  const cfg = onnxEvalConfigSchema.parse(ctx.job.payload);
  const runId = ctx.job.runId;
  if (!runId) throw new Error("an onnx-eval job needs a runId");
  const source = getRun(cfg.sourceRunId);
  const train = parseTrainConfig(source.config);
  const ckpt = listCheckpoints(cfg.sourceRunId)
    .filter((c) => c.onnxPath && (cfg.checkpointStep === null || c.step === cfg.checkpointStep))
    .at(-1);
  if (!ckpt)
    throw new Error(
      `run ${cfg.sourceRunId} has no exported ONNX policy${cfg.checkpointStep !== null ? ` at step ${cfg.checkpointStep}` : ""} (train with exportOnnx)`,
    );
  const policy = await OnnxPolicy.load(path.join(path.dirname(ckpt.onnxPath!), "policy.json"));
  ctx.log(`ONNX policy of run ${source.name} (checkpoint step ${ckpt.step}) on ${train.envId}: ${cfg.episodes} held-out tasks, greedy, onnxruntime-node CPU`);
  // The source run's held-out instances, and every instance its training could draw.
  const heldOut = heldOutFor(train);
  const evalSet = evalTasks(heldOut, cfg.episodes);
  const trainKeys = trainingInstances(train.envId, train.envConfig, heldOut, train.seed, train.steps, train.groupsPerStep);
  const overlap = overlapCount(
    evalSet.map((t) => t.key),
    trainKeys,
  );
  ctx.log(
    `held-out: ${evalSet.length} distinct instances; instances the source's training (${train.steps} steps x ${train.groupsPerStep} tasks) could draw among them: ${overlap}`,
    overlap ? "warn" : "info",
  );
  const total = storedTotals(runId);
  const batches = Math.ceil(evalSet.length / cfg.episodesPerBatch);
  try {
    for (let b = 0; b < batches; b++) {
      if (ctx.signal.aborted) return { stoppedAt: b };
      if (stepExists(runId, b)) continue;
      const t0 = performance.now();
      const tasks = [];
      for (let i = b * cfg.episodesPerBatch; i < Math.min(evalSet.length, (b + 1) * cfg.episodesPerBatch); i++)
        tasks.push({ uid: `eval-${i}`, taskSeed: evalSet[i].seed });
      const played = await rollout({
        makeEnv: () => createEnv(train.envId, train.envConfig),
        tasks,
        groupSize: 1,
        context: train.context,
        instructions: train.instructions,
        restrictToAdmissible: train.restrictToAdmissible,
        recordView: true,
        generate: (reqs) => policy.generate(reqs, train.maxNewTokens),
        signal: ctx.signal,
      });
      const groups = played.map((g) => toStoredGroup(g, train.envId));
      storeEvalBatch(ctx, runId, b, groups, (performance.now() - t0) / 1000, total, { "eval/train_overlap": overlap });
      await ctx.progress((b + 1) / batches, `${total.episodes}/${evalSet.length} episodes`);
    }
  } finally {
    await policy.close();
  }
  const result = { ...summary(total), trainOverlap: overlap };
  ctx.log(`done: greedy success rate ${result.successRate.toFixed(3)} on ${result.episodes} held-out tasks (training instances among them: ${overlap})`);
  return result;
};
