// GRPO: group-normalised outcome advantage (verl core_algos `compute_grpo_outcome_advantage`).
import { z } from "zod";
import type { FlatBatch } from "./flat";
import { broadcastGroupToTurns, broadcastToTurns, groupScoreStats } from "./outcome";
import { buildResult } from "./result";
import { defineEstimator } from "./spec";

export const grpoParams = z
  .object({
    epsilon: z.number().positive().default(1e-6).describe("Added to the group std: (R - mean) / (std + epsilon). verl default 1e-6."),
  })
  .strict();
export type GrpoParams = z.output<typeof grpoParams>;

/**
 * GRPO outcome advantage, one scalar per trajectory.
 *
 * Args:
 *   flat: batch rows; score R_i = sum_t r_t of trajectory i (undiscounted).
 *   params.epsilon: float, default 1e-6.
 * Returns:
 *   perTraj: (nTraj,) advantage of each trajectory; broadcast to its turns by the caller.
 *
 * Group of one: mean 0, std 1 (verl), so A = R / (1 + epsilon). A group whose scores are all
 * equal gets exactly 0.
 */
export function grpoTrajectoryAdvantage(flat: FlatBatch, params: GrpoParams) {
  const st = groupScoreStats(flat);
  const perTraj = new Float64Array(flat.nTraj);
  for (let i = 0; i < flat.nTraj; i++) {
    const g = flat.trajGroup[i];
    if (st.size[g] === 1) {
      perTraj[i] = (st.score[i] - 0) / (1 + params.epsilon); // singleton: mean 0, std 1
    } else if (st.constant[g]) {
      perTraj[i] = 0; // zero variance: advantage collapse
    } else {
      perTraj[i] = (st.score[i] - st.mean[g]) / (st.std[g] + params.epsilon); // GRPO Eq.: A_i = (R_i - mean(R)) / (std(R) + eps)
    }
  }
  return { perTraj, stats: st };
}

export const grpo = defineEstimator({
  id: "grpo",
  title: "GRPO (group-normalised outcome)",
  paper: {
    title: "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models",
    authors: "Shao et al.",
    year: 2024,
    url: "https://arxiv.org/abs/2402.03300",
  },
  needs: ["reward"],
  paramsSchema: grpoParams,
  run(flat, params) {
    const { perTraj, stats } = grpoTrajectoryAdvantage(flat, params);
    return buildResult(flat, "grpo", broadcastToTurns(flat, perTraj), {
      score: broadcastToTurns(flat, stats.score),
      groupMean: broadcastGroupToTurns(flat, stats.mean),
      groupStd: broadcastGroupToTurns(flat, stats.std),
    });
  },
});
