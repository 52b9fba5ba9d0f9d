// MARS: turn-level advantage with agent-specific normalisation for self-play games
// (Yuan, Xu et al. 2025, https://arxiv.org/abs/2510.15414; code: thu-nics/MARS on ROLL).
import { z } from "zod";
import type { FlatBatch } from "./flat";
import { buildResult, whiteningDiagnostics } from "./result";
import { defineEstimator } from "./spec";
import { keyedStats, maskedWhiten } from "./stats";

export const marsParams = z
  .object({
    variant: z
      .enum(["code", "paper"])
      .default("code")
      .describe("code: centre per player and env tag, whiten, return, whiten over the batch; paper: return, then z-score per agent role."),
    gamma: z.number().min(0).max(1).default(1).describe("Discount over the same player's later turns (paper: 1)."),
    epsilon: z.number().positive().default(1e-6).describe("paper variant: added to the role std."),
  })
  .strict();
export type MarsParams = z.output<typeof marsParams>;

/** Role key per row: (env tag, agent) -> dense integer. */
function roleKeys(flat: FlatBatch): { key: Int32Array; count: number } {
  const agents = flat.agentKeys();
  const key = new Int32Array(flat.nTurns);
  const ids = new Map<string, number>();
  const tags = envTags(flat);
  for (let i = 0; i < flat.nTraj; i++) {
    for (let r = flat.trajTurnStart[i]; r < flat.trajTurnStart[i + 1]; r++) {
      const k = tags[i] + "\u0000" + agents[r];
      let id = ids.get(k);
      if (id === undefined) {
        id = ids.size;
        ids.set(k, id);
      }
      key[r] = id;
    }
  }
  return { key, count: ids.size };
}

function envTags(flat: FlatBatch): string[] {
  const out: string[] = [];
  for (const g of flat.batch.groups) for (const t of g.trajectories) out.push(t.envTag ?? "");
  return out;
}

/** Per-player return over the player's own turns: G_t = x_t + gamma G_{next turn of the same agent}. */
function playerReturns(flat: FlatBatch, x: Float64Array, gamma: number): Float64Array {
  const agents = flat.agentKeys();
  const out = new Float64Array(flat.nTurns);
  const running = new Map<string, number>();
  for (let i = 0; i < flat.nTraj; i++) {
    running.clear();
    for (let r = flat.trajTurnStart[i + 1] - 1; r >= flat.trajTurnStart[i]; r--) {
      const g = x[r] + gamma * (running.get(agents[r]) ?? 0); // A_{i,t} = sum_{k>=t} gamma^(k-t) r_{i,k}
      running.set(agents[r], g);
      out[r] = g;
    }
  }
  return out;
}

/**
 * MARS advantages. Roles are (trajectory envTag, turn agent); a missing agent is one role.
 *
 * paper: A_{i,t} = sum_{k>=t} r_{i,k} over player i's own turns (gamma 1), then per role
 *   (A - mean_role) / (std_role + eps) (unbiased std; a role with one turn: mean 0, std 1;
 *   zero variance: 0).
 * code: x = r - mean_role(r); x whitened over the batch (verl/ROLL masked_whiten, token
 *   weighted); player return over x; whitened again over the batch.
 * Returns: advantage, return, (nTurns,).
 */
export function marsCompute(flat: FlatBatch, params: MarsParams) {
  const n = flat.nTurns;
  const { key, count } = roleKeys(flat);
  if (params.variant === "paper") {
    const ret = playerReturns(flat, flat.reward, params.gamma);
    const { count: cnt, mean, std } = keyedStats(ret, key, count);
    const adv = new Float64Array(n);
    for (let r = 0; r < n; r++) {
      const k = key[r];
      if (cnt[k] === 1)
        adv[r] = ret[r] / (1 + params.epsilon); // one member: mean 0, std 1
      else adv[r] = (ret[r] - mean[k]) / (std[k] + params.epsilon); // agent-specific normalisation
    }
    return { advantage: adv, ret, zeroed: 0, masked: 0 };
  }
  // the role's plain mean (sum / count, as ROLL's torch mean), not keyedStats' exact mean of a
  // constant role: the code variant's figures stay those of the reference
  const cnt = new Int32Array(count);
  const sum = new Float64Array(count);
  for (let r = 0; r < n; r++) {
    cnt[key[r]]++;
    sum[key[r]] += flat.reward[r];
  }
  const centred = new Float64Array(n);
  for (let r = 0; r < n; r++) centred[r] = flat.reward[r] - sum[key[r]] / cnt[key[r]]; // r - mean of the player's turn rewards
  // whiten rewards; a masked turn keeps verl's value here: the returns of valid turns read it
  const white = maskedWhiten(centred, flat.tokens, "mars", "whiten");
  const ret = playerReturns(flat, white.out, params.gamma); // REINFORCE return
  const adv = maskedWhiten(ret, flat.tokens, "mars"); // whiten advantages over the batch; masked turns 0
  return { advantage: adv.out, ret, zeroed: white.zeroed + adv.zeroed, masked: adv.masked };
}

export const mars = defineEstimator({
  id: "mars",
  title: "MARS (turn-level, agent-specific normalisation)",
  paper: {
    title: "MARS: Reinforcing Multi-Agent Reasoning of LLMs through Self-Play in Strategic Games",
    authors: "Yuan, Xu et al.",
    year: 2025,
    url: "https://arxiv.org/abs/2510.15414",
  },
  needs: ["reward"],
  reads: ["agent", "tokens"],
  paramsSchema: marsParams,
  run(flat, params) {
    const o = marsCompute(flat, params);
    return buildResult(flat, "mars", o.advantage, { return: o.ret }, whiteningDiagnostics(o.zeroed, o.masked));
  },
});
