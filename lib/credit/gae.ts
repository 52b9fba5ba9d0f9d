// GAE with a critic (verl core_algos `compute_gae_advantage_return`), at turn granularity:
// each turn is one step with reward r_t and critic value V_t = V(s_t).
import { z } from "zod";
import type { FlatBatch } from "./flat";
import { bilevelGae } from "./gae-bilevel";
import { buildResult, whiteningDiagnostics } from "./result";
import { defineEstimator } from "./spec";
import { maskedWhiten } from "./stats";

export const gaeParams = z
  .object({
    gamma: z.number().min(0).max(1).default(1).describe("Discount gamma (verl default 1.0)."),
    lam: z.number().min(0).max(1).default(1).describe("GAE lambda (verl default 1.0)."),
    variant: z
      .enum(["verl", "legacy", "ragen_bilevel"])
      .default("verl")
      .describe(
        "verl: carry next value and running advantage through masked turns (tokens = 0); legacy: older verl, no skipping; ragen_bilevel: RAGEN turn-level GAE with highLevelGamma.",
      ),
    highLevelGamma: z.number().min(0).max(1).default(0.95).describe("ragen_bilevel only: turn-level discount (RAGEN default 0.95)."),
    whiten: z.boolean().default(true).describe("Whiten advantages over all valid tokens of the batch (verl always does)."),
  })
  .strict();
export type GaeParams = z.output<typeof gaeParams>;

/**
 * Turn-level GAE.
 *
 * Args:
 *   flat: batch rows; `tokens` (default 1) is the turn's valid-token count and its mask:
 *     a turn with tokens = 0 is a masked position (e.g. an observation segment).
 *   value: (nTurns,) V(s_t).
 *   params: gamma (1.0), lam (1.0), variant ("verl").
 * Returns: advantage (nTurns,) before whitening and returns = A + V (nTurns,).
 *
 *   delta_t = r_t + gamma V_{t+1} - V_t,   A_t = delta_t + gamma lam A_{t+1}   (GAE, Schulman 2016)
 * verl: at a masked turn, next value and running advantage are carried through unchanged.
 * legacy: V_{t+1} is the next turn's value whatever its mask. Truncation bootstraps 0.
 */
export function turnGae(flat: FlatBatch, value: Float64Array, params: Pick<GaeParams, "gamma" | "lam" | "variant">) {
  const n = flat.nTurns;
  const adv = new Float64Array(n);
  const ret = new Float64Array(n);
  const { reward, tokens, trajTurnStart } = flat;
  const { gamma, lam } = params;
  for (let i = 0; i < flat.nTraj; i++) {
    const a = trajTurnStart[i];
    const b = trajTurnStart[i + 1];
    let nextValue = 0;
    let last = 0;
    for (let r = b - 1; r >= a; r--) {
      if (params.variant === "legacy") {
        const next = r + 1 < b ? value[r + 1] : 0;
        const delta = reward[r] + gamma * next - value[r]; // delta_t = r_t + gamma V_{t+1} - V_t
        last = delta + gamma * lam * last; // A_t = delta_t + gamma lam A_{t+1}
      } else {
        const delta = reward[r] + gamma * nextValue - value[r];
        const cand = delta + gamma * lam * last;
        if (tokens[r] > 0) {
          nextValue = value[r];
          last = cand;
        } // masked turn: skip values and TD error (carry through)
      }
      adv[r] = last;
      ret[r] = last + value[r]; // returns = A + V (before whitening)
    }
  }
  return { adv, ret };
}

export const gae = defineEstimator({
  id: "gae",
  title: "GAE (critic; verl, legacy verl, RAGEN bi-level)",
  paper: {
    title: "High-Dimensional Continuous Control Using Generalized Advantage Estimation",
    authors: "Schulman et al.",
    year: 2016,
    url: "https://arxiv.org/abs/1506.02438",
  },
  needs: ["reward", "value"],
  reads: ["tokens"],
  paramsSchema: gaeParams,
  run(flat, params) {
    const value = flat.numeric("value");
    const { adv, ret } = params.variant === "ragen_bilevel" ? bilevelGae(flat, value, params.highLevelGamma, params.lam) : turnGae(flat, value, params);
    const wh = params.whiten ? maskedWhiten(adv, flat.tokens, "gae") : null; // verl masked_whiten
    return buildResult(flat, "gae", wh ? wh.out : adv, { gae: adv, returns: ret }, whiteningDiagnostics(wh ? wh.zeroed : 0, wh ? wh.masked : 0));
  },
});
