// HiPER hierarchical advantage estimation (HAE) (Peng et al. 2026, "HiPER: Hierarchical
// Reinforcement Learning with Explicit Credit Assignment for Large Language Model Agents",
// https://arxiv.org/abs/2602.16165; reference: HiPER-agent hier_gae/core_hgae.py).
import { z } from "zod";
import type { FlatBatch } from "./flat";
import { buildResult } from "./result";
import { defineEstimator } from "./spec";

export const hiperParams = z
  .object({
    gamma: z.number().min(0).max(1).default(0.99).describe("Discount gamma (shared by both levels)."),
    lamTurn: z.number().min(0).max(1).default(0.95).describe("Low-level (turn) GAE lambda inside a segment."),
    lamSeg: z.number().min(0).max(1).default(0.95).describe("High-level (segment) GAE lambda across segments."),
  })
  .strict();
export type HiperParams = z.output<typeof hiperParams>;

/**
 * HAE at turn granularity. A segment is a maximal run of consecutive turns with the same
 * `segment` id (a new id = a subgoal switch). V_low = `value`, V_high = `highValue` (falls back
 * to `value` where absent, like the reference's single-head mode), read at each segment start.
 *
 * Low level, inside segment k (turns s_k..e_k):
 *   delta_t = r_t + gamma V_low(t+1) - V_low(t), where at e_k the next value is V_high(s_{k+1})
 *   (0 after the last segment);  A^L_t = delta_t + gamma lamTurn A^L_{t+1}, reset per segment.
 * High level (SMDP over segments, d_k = e_k - s_k + 1):
 *   target_k = sum_{j<d_k} gamma^j r_{s_k+j} + gamma^{d_k} V_high(s_{k+1})
 *   A^H_k = target_k - V_high(s_k) + gamma^{d_k} lamSeg A^H_{k+1}
 * The turn's advantage is A^L (action tokens); A^H applies to the subgoal tokens of the segment's
 * first turn and is reported as component `high` there (null elsewhere). Truncation bootstraps 0.
 * Returns arrays of shape (nTurns,).
 */
export function hiperCompute(flat: FlatBatch, params: HiperParams) {
  const n = flat.nTurns;
  const seg = flat.numeric("segment");
  const vLow = flat.numeric("value");
  const vHighRaw = flat.numeric("highValue");
  const { reward, trajTurnStart } = flat;
  const { gamma, lamTurn, lamSeg } = params;
  const low = new Float64Array(n);
  const lowRet = new Float64Array(n);
  const high = new Float64Array(n).fill(NaN);
  const highRet = new Float64Array(n).fill(NaN);
  const segIndex = new Int32Array(n);
  const vHigh = (r: number) => (!Number.isNaN(vHighRaw[r]) ? vHighRaw[r] : vLow[r]);
  const starts: number[] = [];
  for (let i = 0; i < flat.nTraj; i++) {
    const a = trajTurnStart[i];
    const b = trajTurnStart[i + 1];
    starts.length = 0;
    for (let r = a; r < b; r++) {
      if (r === a || seg[r] !== seg[r - 1]) starts.push(r);
      segIndex[r] = starts.length - 1;
    }
    let nextSegAdv = 0;
    for (let k = starts.length - 1; k >= 0; k--) {
      const s = starts[k];
      const e = k + 1 < starts.length ? starts[k + 1] - 1 : b - 1;
      const boot = k + 1 < starts.length ? vHigh(starts[k + 1]) : 0; // V_high at the next boundary; 0 at the end
      // low level inside the segment
      let nextAdv = 0;
      for (let r = e; r >= s; r--) {
        const vNext = r < e ? vLow[r + 1] : boot;
        const delta = reward[r] + gamma * vNext - vLow[r]; // delta_t = r_t + gamma V_{t+1} - V_t
        nextAdv = delta + gamma * lamTurn * nextAdv; // A^L_t = delta_t + gamma lam A^L_{t+1}
        low[r] = nextAdv;
        lowRet[r] = nextAdv + vLow[r];
      }
      // high level across segments
      let segReturn = 0;
      let disc = 1;
      for (let r = s; r <= e; r++) {
        segReturn += disc * reward[r];
        disc *= gamma;
      }
      const gd = gamma ** (e - s + 1);
      const target = segReturn + gd * boot; // target = sum gamma^j r + gamma^{d_k} V_high(next)
      const adv = target - vHigh(s) + gd * lamSeg * nextSegAdv; // A_k = delta_k + gamma^{d_k} lam_seg A_{k+1}
      high[s] = adv;
      highRet[s] = adv + vHigh(s);
      nextSegAdv = adv;
    }
  }
  return { low, lowRet, high, highRet, segIndex };
}

export const hiper = defineEstimator({
  id: "hiper",
  title: "HiPER hierarchical advantage (subgoal segments)",
  paper: {
    title: "HiPER: Hierarchical Reinforcement Learning with Explicit Credit Assignment for Large Language Model Agents",
    authors: "Peng et al.",
    year: 2026,
    url: "https://arxiv.org/abs/2602.16165",
  },
  needs: ["reward", "value", "segment"],
  reads: ["highValue"],
  paramsSchema: hiperParams,
  run(flat, params) {
    const o = hiperCompute(flat, params);
    return buildResult(flat, "hiper", o.low, {
      low: o.low,
      high: o.high,
      returnsLow: o.lowRet,
      returnsHigh: o.highRet,
      segmentIndex: o.segIndex,
    });
  },
});
