// GiGPO: Group-in-Group Policy Optimization (verl-agent `gigpo/core_gigpo.py`,
// Feng et al. 2025, https://arxiv.org/abs/2505.10978). Semantics: this file and lib/credit/README.md.
import { z } from "zod";
import { flatten, type FlatBatch } from "./flat";
import type { AnchorGroupDiagnostics } from "./result";
import { buildResult } from "./result";
import { similarAtLeast } from "./similarity";
import { CreditRequestError } from "./errors";
import { defineEstimator } from "./spec";

export const gigpoParams = z
  .object({
    gamma: z.number().min(0).max(1).default(0.95).describe("Discount of the step return G_t = r_t + gamma G_{t+1} (verl-agent scripts: 0.95)."),
    omega: z.number().default(1).describe("Weight of the step advantage: A = A_E + omega * A_S (verl-agent `step_advantage_w`, default 1)."),
    mode: z.enum(["mean_std_norm", "mean_norm"]).default("mean_std_norm").describe("mean_std_norm: (x - mean) / (std + eps); mean_norm: x - mean (no std)."),
    invalidPenalty: z
      .number()
      .min(0)
      .default(0.1)
      .describe("Subtracted from an invalid turn's G_t and from its copy of the episode score, after discounting (scripts: 0.1)."),
    perTrajectory: z.boolean().default(false).describe("Episode statistics over trajectories (paper Eq. 3) instead of over all step rows (code default)."),
    epsilon: z.number().positive().default(1e-6).describe("Added to the std in both normalisations."),
    anchorMatch: z
      .enum(["exact", "similarity"])
      .default("exact")
      .describe("exact: equal canonical anchor keys; similarity: greedy clustering by difflib ratio."),
    similarityThreshold: z.number().gt(0).lt(1).default(0.95).describe("similarity mode: a turn joins the first cluster whose first member has ratio >= this."),
    rowCopies: z
      .array(z.tuple([z.string(), z.number().int().min(0), z.number().int().min(0), z.number().int().min(1)]))
      .max(100_000)
      .default([])
      .describe(
        "Turns the trainer's batch held more than once, as [group uid, trajectory index, turn index, extra copies]: verl-agent's adjust_batch copies rows so the batch divides by the world size, before compute_advantage. Each such turn counts 1 + copies times in the episode and anchor statistics, as it did in training.",
      ),
  })
  .strict();
export type GigpoParams = z.output<typeof gigpoParams>;

export interface AnchorGroups {
  /** Global anchor-group id of every row, in order of first appearance. Shape (nTurns,). */
  groupOf: Int32Array;
  /** Number of anchor groups. */
  count: number;
}

/**
 * Anchor (step) groups: turns of the same uid whose anchors are equal, never across uids;
 * repeated visits within one trajectory all join (Eq. 6). Anchors of different JSON types never
 * share a group (the number 1, the string "1"; null, "null"; {"a":1}, '{"a":1}').
 * Similarity mode: greedy in row order, a turn joins the first cluster of its own JSON type whose
 * first member has ratio >= threshold, else starts one.
 * Args:
 *   flat: batch rows.
 *   keys: (nTurns,) exact: grouping keys (`flat.anchorKeys()`, typed) or dense integer ids
 *     (`flat.anchorIds()`, the fast form); similarity: canonical texts (`flat.anchorTexts()`).
 */
export function buildAnchorGroups(
  flat: FlatBatch,
  keys: readonly string[] | Int32Array,
  match: "exact" | "similarity" = "exact",
  threshold = 0.95,
): AnchorGroups {
  const groupOf = new Int32Array(flat.nTurns);
  let next = 0;
  if (match === "exact" && keys instanceof Int32Array) {
    // latest anchor-group id of each anchor id; an id created before this uid's first id is a
    // stale entry from an earlier uid (uids are processed in order), so never shared across uids
    let max = -1;
    for (let r = 0; r < keys.length; r++) if (keys[r] > max) max = keys[r];
    const latest = new Int32Array(max + 1).fill(-1);
    for (let g = 0; g < flat.nGroups; g++) {
      const lo = flat.trajTurnStart[flat.groupTrajStart[g]];
      const hi = flat.trajTurnStart[flat.groupTrajStart[g + 1]];
      const firstId = next;
      for (let r = lo; r < hi; r++) {
        const k = keys[r];
        let id = latest[k];
        if (id < firstId) {
          id = next++;
          latest[k] = id;
        }
        groupOf[r] = id;
      }
    }
    return { groupOf, count: next };
  }
  if (keys instanceof Int32Array) throw new Error("buildAnchorGroups: similarity matching needs the anchor texts");
  const kinds = match === "exact" ? null : flat.anchorKinds();
  // exact: one Map key -> latest anchor-group id (same stale-entry rule as above)
  const latest = new Map<string, number>();
  for (let g = 0; g < flat.nGroups; g++) {
    const lo = flat.trajTurnStart[flat.groupTrajStart[g]];
    const hi = flat.trajTurnStart[flat.groupTrajStart[g + 1]];
    if (kinds === null) {
      const firstId = next;
      for (let r = lo; r < hi; r++) {
        const k = keys[r];
        let id = latest.get(k);
        if (id === undefined || id < firstId) {
          id = next++;
          latest.set(k, id);
        }
        groupOf[r] = id;
      }
    } else {
      const reps: string[] = [];
      const repKinds: number[] = [];
      const ids: number[] = [];
      for (let r = lo; r < hi; r++) {
        const k = keys[r];
        const kind = kinds[r];
        let found = -1;
        for (let c = 0; c < reps.length; c++) {
          if (repKinds[c] === kind && similarAtLeast(k, reps[c], threshold)) {
            found = ids[c];
            break;
          }
        }
        if (found < 0) {
          found = next++;
          reps.push(k);
          repKinds.push(kind);
          ids.push(found);
        }
        groupOf[r] = found;
      }
    }
  }
  return { groupOf, count: next };
}

/** Renumbers group ids (e.g. `buildAnchorGroups`' global ids) by first appearance in row-major order; null stays null. */
export function renumberGroups(ids: ReadonlyArray<ReadonlyArray<number | string | null>>): (number | null)[][] {
  const map = new Map<number | string, number>();
  return ids.map((row) =>
    row.map((v) => {
      if (v === null || v === undefined) return null;
      let id = map.get(v);
      if (id === undefined) {
        id = map.size;
        map.set(v, id);
      }
      return id;
    }),
  );
}

/**
 * Anchor-group ids of ONE task group's turns (rows = trajectories), exact mode: `buildAnchorGroups`
 * over that group alone, numbered by first appearance; a turn without an anchor is in no group (null).
 * The heatmap's view of step 4, so the page and training group turns the same way.
 */
export function groupAnchorIds(anchors: ReadonlyArray<ReadonlyArray<string | null>>): (number | null)[][] {
  const trajectories = anchors.map((row, i) => ({ id: String(i), turns: row.map((a) => (a === null ? { reward: 0 } : { reward: 0, anchor: a })) }));
  const flat = flatten({ groups: [{ uid: "", trajectories }] }, false);
  const { groupOf } = buildAnchorGroups(flat, flat.anchorIds());
  let r = 0;
  return renumberGroups(anchors.map((row) => row.map((a) => (a === null ? (r++, null) : groupOf[r++]))));
}

export interface GigpoOutput {
  /** A = A_E + omega * A_S. Shape (nTurns,). */
  advantage: Float64Array;
  /** Episode advantage A_E. Shape (nTurns,). */
  episode: Float64Array;
  /** Step advantage A_S (before omega). Shape (nTurns,). */
  step: Float64Array;
  /** Step return G_t after the invalid-action penalty. Shape (nTurns,). */
  ret: Float64Array;
  anchor: AnchorGroups;
  /** Members of each row's anchor group. Shape (nTurns,). */
  anchorSize: Int32Array;
  diagnostics: AnchorGroupDiagnostics;
  /** Rows set to 0 by a zero-variance episode statistic although their copy differed from it. */
  zeroed: number;
}

/**
 * GiGPO advantages.
 *
 * Args:
 *   flat: batch rows (reward, invalid, anchors).
 *   params: see `gigpoParams` (gamma 0.95, omega 1, mode mean_std_norm, invalidPenalty 0.1,
 *     perTrajectory false, epsilon 1e-6).
 * Returns: GigpoOutput, every array of shape (nTurns,).
 *
 * 1. G_t = r_t + gamma G_{t+1} per trajectory (Eq. 5); truncation bootstraps 0.
 * 2. Penalty p = invalidPenalty * invalid_t, subtracted after discounting from G_t and from the
 *    turn's copy R - p of the episode score; not propagated to earlier turns.
 * 3. A_E: statistics by uid over all step rows (each row contributes its copy, so trajectories
 *    weigh by length); perTrajectory uses each trajectory's first row (verl-agent
 *    `compute_mean_std_cross_all_data=False`). One member: mean 0, std 1.
 * 4. Anchor groups (see `buildAnchorGroups`).
 * 5. A_S: G normalised within the anchor group. One member: mean = the value, std 1, so A_S = 0.
 *    Zero variance gives 0.
 * 6. A = A_E + omega A_S (Eq. 8).
 */
/**
 * How many times each row counts in the statistics: 1, plus the extra copies `rowCopies` names
 * (a turn the trainer's batch held twice weighs as two identical members). Shape (nTurns,).
 */
export function rowWeights(flat: FlatBatch, rowCopies: GigpoParams["rowCopies"]): Float64Array {
  const w = new Float64Array(flat.nTurns).fill(1);
  if (!rowCopies.length) return w;
  const groupOf = new Map(flat.batch.groups.map((g, i) => [g.uid, i]));
  rowCopies.forEach(([uid, traj, turn, copies], j) => {
    const where = `params.rowCopies[${j}]`;
    const g = groupOf.get(uid);
    if (g === undefined) throw new CreditRequestError(`${where}: no group "${uid}" in the batch`, where);
    const i = flat.groupTrajStart[g] + traj;
    if (i >= flat.groupTrajStart[g + 1]) throw new CreditRequestError(`${where}: group "${uid}" has no trajectory ${traj}`, where);
    const r = flat.trajTurnStart[i] + turn;
    if (r >= flat.trajTurnStart[i + 1]) throw new CreditRequestError(`${where}: trajectory ${traj} of group "${uid}" has no turn ${turn}`, where);
    w[r] += copies;
  });
  return w;
}

export function gigpoCompute(flat: FlatBatch, params: GigpoParams): GigpoOutput {
  // One function per pass: a long function of sequential loops gets on-stack-replaced and
  // deoptimised loop after loop (each later loop has no type feedback yet), recompiling it each time.
  // how many times each row counts (verl-agent adjust_batch's copies); all 1 without rowCopies
  const w = rowWeights(flat, params.rowCopies ?? []);

  // 4. Anchor groups first, so the return pass can accumulate their sums.
  const similarity = params.anchorMatch === "similarity";
  const keys = similarity ? flat.anchorTexts() : flat.anchorIds();
  const anchor = buildAnchorGroups(flat, keys, params.anchorMatch, params.similarityThreshold);

  // 1-2. Discounted step returns (Eq. 5), penalty after discounting; episode score per trajectory.
  const r = stepReturns(flat, w, anchor, params);
  // 3. Episode advantage A_E per uid.
  const { episode, zeroed } = episodeAdvantage(flat, r, params);
  // 5-6. Step advantage A_S within anchor groups, A = A_E + omega A_S.
  const { stepAdv, advantage, anchorSize, absStep } = stepAdvantage(flat, w, anchor, r, episode, params);

  const m = anchor.count;
  const hist: Record<string, number> = {};
  let singletons = 0;
  for (let k = 0; k < m; k++) {
    const c = r.cnt[k];
    hist[c] = (hist[c] ?? 0) + 1;
    if (c === 1) singletons++;
  }
  const n = flat.nTurns;
  return {
    advantage,
    episode,
    step: stepAdv,
    ret: r.ret,
    anchor,
    anchorSize,
    zeroed,
    diagnostics: {
      count: m,
      singletonRatio: m > 0 ? singletons / m : 0,
      sizeHistogram: hist,
      meanAbsStep: n > 0 ? absStep / n : 0,
    },
  };
}

interface StepReturns {
  /** Step return G_t after the invalid-action penalty. Shape (nTurns,). */
  ret: Float64Array;
  /** Undiscounted score R of each trajectory. Shape (nTraj,). */
  score: Float64Array;
  /** Weighted counts of each trajectory's valid and invalid rows. Shape (nTraj,). */
  nValid: Float64Array;
  nInvalid: Float64Array;
  /** Per anchor group: weighted count, weighted sum of G, first G, all G equal. Shape (count,). */
  cnt: Float64Array;
  sum: Float64Array;
  first: Float64Array;
  constant: Uint8Array;
}

/** Steps 1-2: G_t = r_t + gamma G_{t+1} (Eq. 5), the penalty after discounting; anchor-group sums. */
function stepReturns(flat: FlatBatch, w: Float64Array, anchor: AnchorGroups, params: GigpoParams): StepReturns {
  const { reward, invalid, trajTurnStart } = flat;
  const gamma = params.gamma;
  const coef = params.invalidPenalty;
  const m = anchor.count;
  const gid = anchor.groupOf;
  const cnt = new Float64Array(m);
  const sum = new Float64Array(m);
  const first = new Float64Array(m);
  const constant = new Uint8Array(m).fill(1);
  const ret = new Float64Array(flat.nTurns);
  const score = new Float64Array(flat.nTraj);
  // weighted counts of each trajectory's valid and invalid rows (row counts without rowCopies)
  const nValid = new Float64Array(flat.nTraj);
  const nInvalid = new Float64Array(flat.nTraj);
  for (let i = 0; i < flat.nTraj; i++) {
    const a = trajTurnStart[i];
    const b = trajTurnStart[i + 1];
    let run = 0;
    let R = 0;
    let bad = 0;
    let good = 0;
    for (let r = b - 1; r >= a; r--) {
      run = reward[r] + gamma * run; // Eq. 5: G_t = r_t + gamma * G_{t+1}
      R += reward[r];
      let v = run;
      if (invalid[r] === 1) {
        v -= coef; // penalty AFTER discounting, this turn only (not propagated)
        bad += w[r];
      } else good += w[r];
      ret[r] = v;
      const k = gid[r];
      if (cnt[k] === 0) first[k] = v;
      else if (v !== first[k]) constant[k] = 0;
      cnt[k] += w[r];
      sum[k] += v * w[r];
    }
    score[i] = R;
    nValid[i] = good;
    nInvalid[i] = bad;
  }
  return { ret, score, nValid, nInvalid, cnt, sum, first, constant };
}

/**
 * Step 3: episode advantage A_E per uid. Each step row holds its copy of R, minus the penalty on an
 * invalid row (verl-agent penalises the row's token-level score).
 */
function episodeAdvantage(flat: FlatBatch, sr: StepReturns, params: GigpoParams): { episode: Float64Array; zeroed: number } {
  const { invalid, trajTurnStart, groupTrajStart } = flat;
  const { score, nValid, nInvalid } = sr;
  const coef = params.invalidPenalty;
  const eps = params.epsilon;
  const useStd = params.mode === "mean_std_norm";
  const episode = new Float64Array(flat.nTurns);
  let zeroed = 0;
  for (let g = 0; g < flat.nGroups; g++) {
    const t0 = groupTrajStart[g];
    const t1 = groupTrajStart[g + 1];
    let count = 0;
    let total = 0;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = t0; i < t1; i++) {
      const R = score[i];
      if (params.perTrajectory) {
        const v = invalid[trajTurnStart[i]] === 1 ? R - coef : R; // the trajectory's first row
        count += 1;
        total += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      } else {
        if (nValid[i] > 0) {
          count += nValid[i];
          total += R * nValid[i];
          if (R < lo) lo = R;
          if (R > hi) hi = R;
        }
        if (nInvalid[i] > 0) {
          const v = R - coef;
          count += nInvalid[i];
          total += v * nInvalid[i];
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
      }
    }
    let mean: number;
    let std: number;
    if (count === 1) {
      mean = 0; // one member: mean 0, std 1
      std = 1;
    } else if (lo === hi) {
      mean = lo; // zero variance: every member is exactly the mean
      std = 0;
    } else {
      mean = total / count;
      let m2 = 0;
      for (let i = t0; i < t1; i++) {
        const R = score[i];
        if (params.perTrajectory) {
          const v = invalid[trajTurnStart[i]] === 1 ? R - coef : R;
          m2 += (v - mean) * (v - mean);
        } else {
          m2 += nValid[i] * (R - mean) * (R - mean) + nInvalid[i] * (R - coef - mean) * (R - coef - mean);
        }
      }
      std = Math.sqrt(m2 / (count - 1)); // torch.std (unbiased)
    }
    // zero variance: every row normalises to 0, also a penalised row outside the perTrajectory
    // statistic, which the code would send to -penalty / eps (README "Degenerate statistics")
    const degenerate = useStd && std === 0;
    const scale = useStd ? 1 / (std + eps) : 1;
    for (let i = t0; i < t1; i++) {
      const R = score[i];
      for (let r = trajTurnStart[i]; r < trajTurnStart[i + 1]; r++) {
        const copy = invalid[r] === 1 ? R - coef : R;
        if (degenerate) {
          if (copy !== mean) zeroed++;
          continue;
        }
        episode[r] = (copy - mean) * scale; // Eq. 3: A_E = (R - mean) / (std + eps)   (mean_norm: R - mean)
      }
    }
  }
  return { episode, zeroed };
}

/** Steps 5-6: A_S within anchor groups (two passes, like torch.mean / torch.std); A = A_E + omega A_S. */
function stepAdvantage(flat: FlatBatch, w: Float64Array, anchor: AnchorGroups, sr: StepReturns, episode: Float64Array, params: GigpoParams) {
  const n = flat.nTurns;
  const m = anchor.count;
  const gid = anchor.groupOf;
  const { ret, cnt, sum, first, constant } = sr;
  const eps = params.epsilon;
  const useStd = params.mode === "mean_std_norm";
  const mean = new Float64Array(m);
  for (let k = 0; k < m; k++) mean[k] = constant[k] ? first[k] : sum[k] / cnt[k];
  const m2 = new Float64Array(m);
  if (useStd) {
    for (let r = 0; r < n; r++) {
      const k = gid[r];
      const d = ret[r] - mean[k];
      m2[k] += w[r] * d * d;
    }
  }
  const inv = new Float64Array(m);
  for (let k = 0; k < m; k++) {
    // one member: std 1 (its mean is the value itself, so A_S = 0 exactly); zero variance: 0
    inv[k] = useStd ? 1 / ((cnt[k] === 1 ? 1 : constant[k] ? 0 : Math.sqrt(m2[k] / (cnt[k] - 1))) + eps) : 1;
  }
  const stepAdv = new Float64Array(n);
  const advantage = new Float64Array(n);
  const anchorSize = new Int32Array(n);
  const omega = params.omega;
  let absStep = 0;
  for (let r = 0; r < n; r++) {
    const k = gid[r];
    const s = (ret[r] - mean[k]) * inv[k]; // Eq. 7: A_S = (G - mean_anchor) / (std_anchor + eps)
    stepAdv[r] = s;
    absStep += Math.abs(s);
    anchorSize[r] = cnt[k];
    advantage[r] = episode[r] + omega * s; // Eq. 8: A = A_E + omega * A_S
  }
  return { stepAdv, advantage, anchorSize, absStep };
}

export const gigpo = defineEstimator({
  id: "gigpo",
  title: "GiGPO (episode + anchor-state step advantage)",
  paper: {
    title: "Group-in-Group Policy Optimization for LLM Agent Training",
    authors: "Feng, Xue, Liu, An",
    year: 2025,
    url: "https://arxiv.org/abs/2505.10978",
  },
  needs: ["reward", "anchor"],
  reads: ["invalid"],
  paramsSchema: gigpoParams,
  // verl-agent's config names (algorithm.gigpo.*, actor.invalid_action_penalty_coef); gamma, mode and epsilon are the same
  trainerNames: { step_advantage_w: "omega", invalid_action_penalty_coef: "invalidPenalty", similarity_thresh: "similarityThreshold" },
  run(flat, params) {
    const out = gigpoCompute(flat, params);
    return buildResult(
      flat,
      "gigpo",
      out.advantage,
      {
        episode: out.episode,
        step: out.step,
        return: out.ret,
        anchorGroup: out.anchor.groupOf,
        anchorGroupSize: out.anchorSize,
      },
      { anchorGroups: out.diagnostics, zeroVariance: { turns: out.zeroed } },
    );
  },
});
