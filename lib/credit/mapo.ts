// MAPO: Mixed Advantage Policy Optimization with judge (process) rewards. The authors' estimator
// code is not public; this follows the paper and its scripts (semantics in lib/credit/README.md).
import { z } from "zod";
import type { FlatBatch } from "./flat";
import { buildResult } from "./result";
import { defineEstimator } from "./spec";
import { keyedStats } from "./stats";

export const mapoParams = z
  .object({
    gamma: z.number().min(0).max(1).default(0.85).describe("Discount of the judge-score return G_t (paper: 0.85)."),
    wTurn: z.number().default(0.4).describe("Weight of the turn-level advantage (z-score within uid and turn index)."),
    wBatch: z.number().default(0.6).describe("Weight of the batch-level advantage (z-score over all turns)."),
    singleton: z
      .enum(["mask", "zero"])
      .default("mask")
      .describe("A (uid, turn index) group of one: mask = drop the turn from the loss; zero = its turn-level part is 0."),
    epsilon: z.number().positive().default(1e-6).describe("Added to the std in both z-scores."),
  })
  .strict();
export type MapoParams = z.output<typeof mapoParams>;

/**
 * MAPO advantages.
 *
 * Args:
 *   flat: rows with judge scores r_t (NaN = failed judgement, replaced by the trajectory's mean
 *     valid score; 0 when no judgement of the trajectory is valid).
 *   params: gamma 0.85, wTurn 0.4, wBatch 0.6, singleton "mask", epsilon 1e-6.
 * Returns: advantage, turnPart, batchPart, ret, lossMask, each (nTurns,).
 *
 *   G_t = sum_{k>=t} gamma^(k-t) r_k
 *   A_turn = (G - mean_{uid,t}) / (std_{uid,t} + eps)   (unbiased std; zero variance -> 0)
 *   A_batch = (G - mean_batch) / (std_batch + eps)
 *   A = w_turn A_turn + w_batch A_batch
 * A batch of exactly one turn has no batch statistic: A_batch = 0 (not G / (1 + eps)); its
 * (uid, turn) group has one member too, so its advantage is 0 in both singleton modes
 * (test/credit/turn-level.test.ts).
 */
export function mapoCompute(flat: FlatBatch, params: MapoParams) {
  const n = flat.nTurns;
  const judge = flat.judgeScore();
  const { trajTurnStart } = flat;
  const score = new Float64Array(n);
  const ret = new Float64Array(n);
  for (let i = 0; i < flat.nTraj; i++) {
    const a = trajTurnStart[i];
    const b = trajTurnStart[i + 1];
    let s = 0;
    let c = 0;
    for (let r = a; r < b; r++) if (!Number.isNaN(judge[r])) (s += judge[r]), c++;
    const fill = c > 0 ? s / c : 0; // failed judgement -> trajectory's mean valid score
    let run = 0;
    for (let r = b - 1; r >= a; r--) {
      score[r] = !Number.isNaN(judge[r]) ? judge[r] : fill;
      run = score[r] + params.gamma * run; // G_t = r_t + gamma G_{t+1}
      ret[r] = run;
    }
  }

  // Turn-level groups: key = base of the uid + turn index, where a uid's keys span its own longest
  // trajectory, so the number of keys is at most the number of turns (memory linear in turns).
  const keyOf = new Int32Array(n);
  let nKeys = 0;
  for (let g = 0; g < flat.nGroups; g++) {
    let longest = 0;
    for (let i = flat.groupTrajStart[g]; i < flat.groupTrajStart[g + 1]; i++) {
      const a = trajTurnStart[i];
      const len = trajTurnStart[i + 1] - a;
      if (len > longest) longest = len;
      for (let t = 0; t < len; t++) keyOf[a + t] = nKeys + t;
    }
    nKeys += longest;
  }
  const { count: cnt, mean, std } = keyedStats(ret, keyOf, nKeys);
  // the whole batch as one key
  const batch = keyedStats(ret, new Int32Array(n), 1);
  const bMean = batch.mean[0];
  const bStd = batch.std[0];

  const turnPart = new Float64Array(n);
  const batchPart = new Float64Array(n);
  const advantage = new Float64Array(n);
  const lossMask = new Int32Array(n).fill(1);
  let masked = 0;
  for (let r = 0; r < n; r++) {
    const k = keyOf[r];
    const bp = n > 1 ? (ret[r] - bMean) / (bStd + params.epsilon) : 0; // A_batch
    batchPart[r] = bp;
    if (cnt[k] === 1) {
      turnPart[r] = 0;
      if (params.singleton === "mask") {
        lossMask[r] = 0;
        masked++;
        advantage[r] = 0;
        continue;
      }
    } else {
      turnPart[r] = (ret[r] - mean[k]) / (std[k] + params.epsilon); // A_turn
    }
    advantage[r] = params.wTurn * turnPart[r] + params.wBatch * bp; // A = w_turn A_turn + w_batch A_batch
  }
  return { advantage, turnPart, batchPart, ret, score, lossMask, masked };
}

export const mapo = defineEstimator({
  id: "mapo",
  title: "MAPO (mixed turn- and batch-level judge-reward advantage)",
  paper: {
    title: "MAPO: Mixed Advantage Policy Optimization for Long-Horizon Multi-Turn Dialogue",
    authors: "Zhang et al.",
    year: 2026,
    url: "https://arxiv.org/abs/2603.06194",
  },
  needs: ["judgeScore"],
  paramsSchema: mapoParams,
  run(flat, params) {
    const o = mapoCompute(flat, params);
    return buildResult(
      flat,
      "mapo",
      o.advantage,
      { turn: o.turnPart, batch: o.batchPart, return: o.ret, judgeScore: o.score, lossMask: o.lossMask },
      params.singleton === "mask" ? { lossMask: { maskedTurns: o.masked } } : {},
    );
  },
});
