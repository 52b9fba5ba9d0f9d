// The `baseline` job: a uniformly random admissible-action policy plays K episodes of an
// environment; every trajectory and turn is stored, with per-batch and cumulative curves.
// Everything is a pure function of the config's seed, so a re-run after a lost worker resumes at
// the first batch not yet stored and produces exactly what the first attempt would have.
import { baselineConfigSchema } from "../../lib/schemas/runs";
import { createEnv } from "../../lib/envs/registry";
import { playEpisode } from "../../lib/envs/play";
import { randomAction } from "../../lib/envs/random-policy";
import { createRng, mixSeed } from "../../lib/envs/rng";
import { evalTasks, heldOutSet } from "../../lib/envs/heldout";
import { stepExists } from "../../lib/db/rollouts";
import { storedTotals, storeEvalBatch, summary } from "./eval-batches";
import type { GroupInput } from "../../lib/schemas/rollouts";
import type { JobRunner } from "./types";

/**
 * Task of group g: the g-th instance of the held-out set (lib/envs/heldout.ts), the same
 * distinct instances trained policies are evaluated on, so the random floor is measured where
 * they are. The G episodes of a group play the same task (GRPO's uid); the config's seed drives
 * the random policy.
 */
export const baselineTasks = (envId: string, envConfig: unknown, groups: number) => evalTasks(heldOutSet(envId, envConfig, groups), groups).map((t) => t.seed);

export const baseline: JobRunner = async (ctx) => {
  const parsed = baselineConfigSchema.safeParse(ctx.job.payload);
  if (!parsed.success) throw new Error(`invalid baseline config: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const cfg = parsed.data;
  const runId = ctx.job.runId;
  if (!runId) throw new Error("a baseline job needs a runId");

  const G = cfg.groupSize;
  const groupsTotal = Math.ceil(cfg.episodes / G);
  const groupsPerBatch = Math.max(1, Math.round(cfg.episodesPerBatch / G));
  const batches = Math.ceil(groupsTotal / groupsPerBatch);
  const env = createEnv(cfg.envId, cfg.envConfig);
  const tasks = baselineTasks(cfg.envId, cfg.envConfig, groupsTotal);
  ctx.log(`baseline: ${cfg.envId}, ${cfg.episodes} episodes in ${groupsTotal} groups of ${G}, ${batches} batches (attempt ${ctx.job.attempts})`);

  // Cumulative totals: on a resumed attempt, start from what earlier attempts stored.
  const total = storedTotals(runId);
  if (total.episodes > 0) ctx.log(`resuming: ${total.episodes} episodes already stored`);

  for (let b = 0; b < batches; b++) {
    if (ctx.signal.aborted) return { stoppedAt: b };
    if (stepExists(runId, b)) continue;
    const t0 = performance.now();
    const groups: GroupInput[] = [];
    for (let g = b * groupsPerBatch; g < Math.min(groupsTotal, (b + 1) * groupsPerBatch); g++) {
      // A small instance space has fewer held-out instances than groups: they repeat.
      const task = tasks[g % tasks.length];
      const trajectories: GroupInput["trajectories"] = [];
      for (let j = 0; j < G && g * G + j < cfg.episodes; j++) {
        const rng = createRng(mixSeed(cfg.seed, "policy", g, j));
        const ep = playEpisode(env, task, (e) => randomAction(e, rng));
        trajectories.push({
          reward: ep.totalReward,
          success: ep.success,
          truncated: ep.truncated,
          turns: ep.turns.map((t) => ({
            observation: t.observation,
            action: t.action,
            reward: t.reward,
            valid: t.valid,
            done: t.done,
            anchor: t.anchor,
            agent: env.numAgents > 1 ? t.agent : null,
            info: { ...t.info, ...(t.view ? { view: t.view } : {}) },
          })),
        });
      }
      groups.push({ uid: `g${g}`, envId: cfg.envId, taskSeed: task, trajectories });
    }
    storeEvalBatch(ctx, runId, b, groups, (performance.now() - t0) / 1000, total);
    await ctx.progress((b + 1) / batches, `${total.episodes}/${cfg.episodes} episodes`);
  }
  const result = summary(total);
  ctx.log(`done: success rate ${result.successRate.toFixed(3)}, mean return ${result.meanReturn.toFixed(3)}, mean length ${result.meanLength.toFixed(2)}`);
  return result;
};
