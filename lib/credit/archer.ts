// ArCHer utterance-level advantage from a double critic (Zhou et al. 2024, "ArCHer: Training
// Language Model Agents via Hierarchical Multi-Turn RL", https://arxiv.org/abs/2402.19446).
import { z } from "zod";
import { buildResult, whiteningDiagnostics } from "./result";
import { defineEstimator } from "./spec";
import { maskedWhiten } from "./stats";

export const archerParams = z
  .object({
    gamma: z
      .number()
      .min(0)
      .max(1)
      .default(0.9)
      .describe("Discount of the critic's TD target r_t + gamma min(V1,V2)(s_{t+1}), reported as component qTarget (paper: 0.9)."),
    whiten: z.boolean().default(false).describe("Whiten advantages over valid tokens (RAGEN's ArCHer port does; the paper does not)."),
  })
  .strict();

export const archer = defineEstimator({
  id: "archer",
  title: "ArCHer (utterance advantage from a double critic)",
  paper: {
    title: "ArCHer: Training Language Model Agents via Hierarchical Multi-Turn RL",
    authors: "Zhou, Zanette, Pan, Levine, Kumar",
    year: 2024,
    url: "https://arxiv.org/abs/2402.19446",
  },
  needs: ["reward", "q1", "value"],
  reads: ["q2", "v2", "tokens"],
  paramsSchema: archerParams,
  /**
   * A_t = min(Q1, Q2)(s_t, a_t) - min(V1, V2)(s_t)   (utterance-level advantage; a missing second
   * head falls back to the first). Component qTarget = r_t + gamma min(V1,V2)(s_{t+1}), 0
   * bootstrap after the last turn (the critic's TD target, for inspection).
   * Shapes: every array (nTurns,).
   */
  run(flat, params) {
    const q1 = flat.numeric("q1");
    const q2 = flat.numeric("q2");
    const v1 = flat.numeric("value");
    const v2 = flat.numeric("v2");
    const n = flat.nTurns;
    const q = new Float64Array(n);
    const v = new Float64Array(n);
    const adv = new Float64Array(n);
    for (let r = 0; r < n; r++) {
      q[r] = !Number.isNaN(q2[r]) ? Math.min(q1[r], q2[r]) : q1[r];
      v[r] = !Number.isNaN(v2[r]) ? Math.min(v1[r], v2[r]) : v1[r];
      adv[r] = q[r] - v[r]; // A(s,a) = min(Q1,Q2)(s,a) - min(V1,V2)(s)
    }
    const target = new Float64Array(n);
    for (let i = 0; i < flat.nTraj; i++) {
      const a = flat.trajTurnStart[i];
      const b = flat.trajTurnStart[i + 1];
      for (let r = a; r < b; r++) target[r] = flat.reward[r] + params.gamma * (r + 1 < b ? v[r + 1] : 0); // y = r + gamma V(s')
    }
    const wh = params.whiten ? maskedWhiten(adv, flat.tokens, "archer") : null;
    return buildResult(flat, "archer", wh ? wh.out : adv, { q, v, qTarget: target }, whiteningDiagnostics(wh ? wh.zeroed : 0, wh ? wh.masked : 0));
  },
});
