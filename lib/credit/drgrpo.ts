// Dr.GRPO: GRPO without the std division (verl `norm_adv_by_std_in_grpo=False`).
import { z } from "zod";
import type { FlatBatch } from "./flat";
import { broadcastGroupToTurns, broadcastToTurns, groupScoreStats } from "./outcome";
import { buildResult } from "./result";
import { defineEstimator } from "./spec";

export const drgrpoParams = z.object({}).strict();

/**
 * Dr.GRPO outcome advantage: A_i = R_i - mean_group(R). Group of one: mean 0, so A = R.
 * Returns: perTraj (nTraj,).
 */
export function drgrpoTrajectoryAdvantage(flat: FlatBatch) {
  const st = groupScoreStats(flat);
  const perTraj = new Float64Array(flat.nTraj);
  for (let i = 0; i < flat.nTraj; i++) {
    const g = flat.trajGroup[i];
    if (st.size[g] === 1)
      perTraj[i] = st.score[i]; // singleton: mean 0
    else if (st.constant[g]) perTraj[i] = 0;
    else perTraj[i] = st.score[i] - st.mean[g]; // Dr.GRPO Eq.: A_i = R_i - mean(R)
  }
  return { perTraj, stats: st };
}

export const drgrpo = defineEstimator({
  id: "drgrpo",
  title: "Dr.GRPO (mean-centred outcome, no std)",
  paper: {
    title: "Understanding R1-Zero-Like Training: A Critical Perspective",
    authors: "Liu et al.",
    year: 2025,
    url: "https://arxiv.org/abs/2503.20783",
  },
  needs: ["reward"],
  paramsSchema: drgrpoParams,
  run(flat) {
    const { perTraj, stats } = drgrpoTrajectoryAdvantage(flat);
    return buildResult(flat, "drgrpo", broadcastToTurns(flat, perTraj), {
      score: broadcastToTurns(flat, stats.score),
      groupMean: broadcastGroupToTurns(flat, stats.mean),
    });
  },
});
