// Plain-loop reference implementations written after the Python sources (verl core_algos
// `compute_grpo_outcome_advantage`, verl-agent gigpo/core_gigpo.py), dict by dict, for the
// loop-vs-fast tests. Deliberately naive: no flattening, no typed arrays.
import { anchorGroupKey } from "../../lib/credit/anchor-key";
import type { Batch } from "../../lib/credit/types";

function torchStd(xs: number[]): number {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** GRPO: per trajectory, broadcast. */
export function grpoLoop(batch: Batch, eps = 1e-6): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const g of batch.groups) {
    const scores = g.trajectories.map((t) => t.turns.reduce((a, x) => a + x.reward, 0));
    let m = 0;
    let s = 1;
    if (scores.length > 1) {
      m = mean(scores);
      s = torchStd(scores);
    }
    g.trajectories.forEach((t, i) => {
      const allEqual = scores.every((x) => x === scores[0]);
      const a = scores.length > 1 && allEqual ? 0 : (scores[i] - m) / (s + eps);
      out[t.id] = t.turns.map(() => a);
    });
  }
  return out;
}

export interface GigpoLoopParams {
  gamma: number;
  omega: number;
  mode: "mean_std_norm" | "mean_norm";
  invalidPenalty: number;
  perTrajectory: boolean;
  epsilon: number;
}

/** GiGPO over step rows, following core_gigpo.py's dictionaries. */
export function gigpoLoop(batch: Batch, p: GigpoLoopParams): Record<string, { adv: number[]; ep: number[]; step: number[] }> {
  type Row = { uid: string; traj: string; score: number; ret: number; anchor: string };
  const rows: Row[] = [];
  for (const g of batch.groups) {
    for (const t of g.trajectories) {
      const R = t.turns.reduce((a, x) => a + x.reward, 0);
      const rets: number[] = new Array(t.turns.length);
      let run = 0;
      for (let k = t.turns.length - 1; k >= 0; k--) {
        run = t.turns[k].reward + p.gamma * run;
        rets[k] = run;
      }
      t.turns.forEach((turn, k) => {
        const pen = turn.invalid ? p.invalidPenalty : 0;
        rows.push({ uid: g.uid, traj: t.id, score: R - pen, ret: rets[k] - pen, anchor: g.uid + "\u0001" + anchorGroupKey(turn.anchor) });
      });
    }
  }
  const removeStd = p.mode === "mean_norm";
  // episode_norm_reward
  const id2score = new Map<string, number[]>();
  const seen = new Set<string>();
  for (const r of rows) {
    const key = r.uid + "\u0000" + r.traj;
    if (seen.has(key)) continue;
    if (!id2score.has(r.uid)) id2score.set(r.uid, []);
    id2score.get(r.uid)!.push(r.score);
    if (p.perTrajectory) seen.add(key);
  }
  const epMean = new Map<string, number>();
  const epStd = new Map<string, number>();
  for (const [k, v] of id2score) {
    if (v.length === 1) {
      epMean.set(k, 0);
      epStd.set(k, 1);
    } else {
      const allEq = v.every((x) => x === v[0]);
      epMean.set(k, allEq ? v[0] : mean(v));
      epStd.set(k, allEq ? 0 : torchStd(v));
    }
  }
  // step_norm_reward
  const id2ret = new Map<string, number[]>();
  for (const r of rows) {
    if (!id2ret.has(r.anchor)) id2ret.set(r.anchor, []);
    id2ret.get(r.anchor)!.push(r.ret);
  }
  const stMean = new Map<string, number>();
  const stStd = new Map<string, number>();
  for (const [k, v] of id2ret) {
    const allEq = v.every((x) => x === v[0]);
    stMean.set(k, allEq ? v[0] : mean(v));
    stStd.set(k, v.length === 1 ? 1 : allEq ? 0 : torchStd(v));
  }
  const out: Record<string, { adv: number[]; ep: number[]; step: number[] }> = {};
  for (const r of rows) {
    // Degenerate-statistics convention (README): a zero-variance statistic normalises to 0; the code
    // itself would give (score - mean) / eps to a penalised row outside the perTrajectory statistic.
    const zeroStd = !removeStd && epStd.get(r.uid)! === 0;
    const ep = removeStd ? r.score - epMean.get(r.uid)! : zeroStd ? 0 : (r.score - epMean.get(r.uid)!) / (epStd.get(r.uid)! + p.epsilon);
    const st = removeStd ? r.ret - stMean.get(r.anchor)! : (r.ret - stMean.get(r.anchor)!) / (stStd.get(r.anchor)! + p.epsilon);
    out[r.traj] ??= { adv: [], ep: [], step: [] };
    out[r.traj].adv.push(ep + p.omega * st);
    out[r.traj].ep.push(ep);
    out[r.traj].step.push(st);
  }
  return out;
}
