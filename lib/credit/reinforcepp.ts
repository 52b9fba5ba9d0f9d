// REINFORCE++ (verl core_algos `compute_reinforce_plus_plus_outcome_advantage`).
import { z } from "zod";
import { broadcastToTurns } from "./outcome";
import { trajectoryScores } from "./flat";
import { buildResult, whiteningDiagnostics } from "./result";
import { defineEstimator } from "./spec";
import { maskedWhitenTurns } from "./stats";

/** Both REINFORCE++ estimators come from this paper. */
export const REINFORCEPP_PAPER = {
  title: "REINFORCE++: An Efficient RLHF Algorithm with Robustness to Both Prompt and Reward Models",
  authors: "Hu et al.",
  year: 2025,
  url: "https://arxiv.org/abs/2501.03262",
};

export const reinforceppParams = z
  .object({
    gamma: z.number().min(0).max(1).default(1).describe("Token discount of the return-to-go inside a turn's response (verl default 1)."),
  })
  .strict();

export const reinforcepp = defineEstimator({
  id: "reinforcepp",
  title: "REINFORCE++ (token return-to-go, batch whitening)",
  paper: REINFORCEPP_PAPER,
  needs: ["reward"],
  reads: ["tokens"],
  paramsSchema: reinforceppParams,
  /**
   * Each turn is one response row whose last valid token carries the trajectory score R (as
   * verl-agent's episode reward manager places it). Token return-to-go with reset after EOS:
   * G_j = gamma^(n-1-j) * R for token j of the turn's n tokens; then whitening over all valid
   * tokens of the batch (verl `masked_whiten`).
   *
   * Returns per turn the mean of its tokens' whitened advantages (exact for every token when
   * gamma = 1, the default); component `return` is the token-mean return.
   */
  run(flat, params) {
    const R = broadcastToTurns(flat, trajectoryScores(flat));
    const n = flat.nTurns;
    const g = params.gamma;
    const tokens = flat.tokens;
    // Token j of a k-token turn holds gamma^(k-1-j) R (G_t = r_t + gamma G_{t+1}, reset after EOS):
    // mean R a1/k and spread R^2 (a2 - a1^2/k) around it, with a1 = sum_j gamma^j, a2 = sum_j gamma^(2j).
    const turnMean = new Float64Array(n);
    const within = new Float64Array(n);
    const spread = new Map<number, number>(); // a2 - a1^2/k per token count k
    for (let r = 0; r < n; r++) {
      const k = tokens[r];
      if (k <= 0 || g === 1) {
        turnMean[r] = R[r];
        continue;
      }
      const a1 = (1 - g ** k) / (1 - g);
      turnMean[r] = (R[r] * a1) / k;
      let w = spread.get(k);
      if (w === undefined) {
        const a2 = (1 - (g * g) ** k) / (1 - g * g);
        w = Math.max(0, a2 - (a1 * a1) / k);
        spread.set(k, w);
      }
      within[r] = R[r] * R[r] * w;
    }
    const wh = maskedWhitenTurns(turnMean, g === 1 ? null : within, tokens, "reinforcepp");
    // whitened: (G - m) / sqrt(var + 1e-8); a turn reports the mean over its tokens
    return buildResult(flat, "reinforcepp", wh.out, { return: turnMean }, whiteningDiagnostics(wh.zeroed, wh.masked));
  },
});
