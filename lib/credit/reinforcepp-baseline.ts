// REINFORCE++-baseline (verl core_algos `compute_reinforce_plus_plus_baseline_outcome_advantage`).
import { z } from "zod";
import { drgrpoTrajectoryAdvantage } from "./drgrpo";
import { broadcastToTurns } from "./outcome";
import { buildResult, whiteningDiagnostics } from "./result";
import { REINFORCEPP_PAPER } from "./reinforcepp";
import { defineEstimator } from "./spec";
import { maskedWhiten } from "./stats";

export const reinforceppBaselineParams = z.object({}).strict();

export const reinforceppBaseline = defineEstimator({
  id: "reinforcepp_baseline",
  title: "REINFORCE++-baseline (group mean baseline, batch whitening)",
  paper: REINFORCEPP_PAPER,
  needs: ["reward"],
  reads: ["tokens"],
  paramsSchema: reinforceppBaselineParams,
  /**
   * x_i = R_i - mean_group(R) (group of one: mean 0), broadcast to every valid token, then
   * whitened over all valid tokens of the batch: (x - m) / sqrt(var + 1e-8) with the
   * token-weighted mean m and Bessel-corrected variance (verl `masked_whiten`).
   * Token weight of a turn = `tokens` (default 1).
   */
  run(flat) {
    const { perTraj } = drgrpoTrajectoryAdvantage(flat); // R - mean_group, singleton mean 0
    const centred = broadcastToTurns(flat, perTraj);
    const wh = maskedWhiten(centred, flat.tokens, "reinforcepp_baseline"); // A = (x - m) / sqrt(var + 1e-8)
    return buildResult(flat, "reinforcepp_baseline", wh.out, { centred }, whiteningDiagnostics(wh.zeroed, wh.masked));
  },
});
