// Output of every estimator: per-trajectory advantages and components, plus batch diagnostics.
// The exact shape is documented in README.md ("Response").
import type { FlatBatch } from "./flat";
import { trajectoryScores } from "./flat";

export type ComponentValue = number | string | null;

export interface TrajectoryCredit {
  id: string;
  /** One advantage per turn. */
  advantages: number[];
  /** Named per-turn components, each one entry per turn (null = not defined for that turn). */
  components: Record<string, ComponentValue[]>;
}

export interface AdvantageSummary {
  /** Mean over all turns (unweighted). */
  mean: number;
  /** Unbiased (N-1) std over all turns; 0 for fewer than 2 turns. */
  std: number;
  min: number;
  max: number;
  /** Share of turns whose advantage is not exactly 0 (|A| > 1e-12). */
  nonZeroShare: number;
}

export interface AnchorGroupDiagnostics {
  /** Number of anchor (step) groups. */
  count: number;
  /** Share of anchor groups with exactly one member. */
  singletonRatio: number;
  /** Anchor-group size -> number of groups of that size (keys are decimal strings). */
  sizeHistogram: Record<string, number>;
  /** Mean |A_S| over all turns (before omega). */
  meanAbsStep: number;
}

export interface CreditDiagnostics {
  estimator: string;
  counts: { groups: number; trajectories: number; turns: number };
  advantage: AdvantageSummary;
  groups: {
    /** Number of uid groups. */
    count: number;
    /** Groups with a single trajectory. */
    singletonCount: number;
    /**
     * Among groups with >= 2 trajectories, the share whose trajectory scores (sum of turn
     * rewards, after any reward transform) are all equal: "advantage collapse" for outcome methods.
     */
    zeroVarianceShare: number;
  };
  anchorGroups?: AnchorGroupDiagnostics;
  /** Turns dropped from the loss (MAPO `singleton: "mask"`): their advantage is reported as 0. */
  lossMask?: { maskedTurns: number };
  /**
   * Turns normalised by a statistic with zero variance (every member equal) whose own value
   * differed from it: reported as 0 instead of +-x / epsilon (README "Degenerate statistics").
   * Present only when there is at least one.
   */
  zeroVariance?: { turns: number };
  /**
   * Masked turns (`tokens: 0`) of a whitening estimator (gae, reinforcepp, reinforcepp_baseline,
   * mars `code`, archer with `whiten`): never members of the statistic, their advantage is 0
   * (verl masks them out of the loss; its formula there can reach thousands). Their raw
   * components keep their values. Present only when there is at least one.
   */
  masked?: { turns: number };
  /** Present when the request carried a reward transform. */
  rewardTransform?: { kind: "gated"; tau: number; gateOpenShare: number };
}

export interface CreditResult {
  trajectories: TrajectoryCredit[];
  diagnostics: CreditDiagnostics;
  /**
   * Only for a columnar FlatBatch (`flat.columnar`, the CLI's fast path): the per-row columns the
   * trajectories would be cut from, and `trajectories` is empty.
   */
  columns?: ResultColumns;
}

export interface ResultColumns {
  advantages: Float64Array;
  /** Component name -> per-row values, in the order the response lists them (empty without components). */
  components: [string, ComponentArray][];
}

/** Estimator-specific diagnostics passed to buildResult. */
export type ExtraDiagnostics = Partial<Pick<CreditDiagnostics, "anchorGroups" | "lossMask" | "zeroVariance" | "masked">>;

/** A whitening's `{ zeroVariance, masked }` for buildResult's extra diagnostics (each dropped there when 0). */
export function whiteningDiagnostics(zeroed: number, masked: number): ExtraDiagnostics {
  return { zeroVariance: { turns: zeroed }, masked: { turns: masked } };
}

export type ComponentArray = Float64Array | Int32Array | ComponentValue[];

/**
 * Slice flat per-row arrays into per-trajectory results and compute the common diagnostics.
 * Float64Array components map NaN to null (JSON has no NaN).
 */
export function buildResult(
  flat: FlatBatch,
  estimator: string,
  advantages: Float64Array,
  components: Record<string, ComponentArray>,
  extra: ExtraDiagnostics = {},
): CreditResult {
  if (flat.columnar) {
    return {
      trajectories: [],
      diagnostics: commonDiagnostics(flat, estimator, advantages, extra),
      columns: { advantages, components: flat.withComponents ? Object.entries(components) : [] },
    };
  }
  const start = flat.trajTurnStart;
  const nTraj = flat.nTraj;
  // Column by column, so each inner loop sees one source type (monomorphic, cache friendly).
  const advCols = sliceColumn(advantages, start, nTraj);
  const compCols: [string, ComponentValue[][]][] = flat.withComponents
    ? Object.entries(components).map(([name, src]) => [name, sliceColumn(src, start, nTraj)])
    : [];
  const trajectories: TrajectoryCredit[] = new Array(nTraj);
  for (let i = 0; i < nTraj; i++) {
    const comps: Record<string, ComponentValue[]> = {};
    for (let c = 0; c < compCols.length; c++) comps[compCols[c][0]] = compCols[c][1][i];
    trajectories[i] = { id: flat.trajIds[i], advantages: advCols[i] as number[], components: comps };
  }
  return { trajectories, diagnostics: commonDiagnostics(flat, estimator, advantages, extra) };
}

/** Per-trajectory plain arrays cut from one flat column (Float64Array NaN -> null). */
function sliceColumn(src: ComponentArray, start: Int32Array, nTraj: number): ComponentValue[][] {
  const out: ComponentValue[][] = new Array(nTraj);
  if (src instanceof Float64Array) {
    for (let i = 0; i < nTraj; i++) {
      const a = start[i];
      const n = start[i + 1] - a;
      const arr: ComponentValue[] = new Array(n);
      for (let k = 0; k < n; k++) {
        const v = src[a + k];
        arr[k] = !Number.isNaN(v) ? v : null;
      }
      out[i] = arr;
    }
  } else if (src instanceof Int32Array) {
    for (let i = 0; i < nTraj; i++) {
      const a = start[i];
      const n = start[i + 1] - a;
      const arr: number[] = new Array(n);
      for (let k = 0; k < n; k++) arr[k] = src[a + k];
      out[i] = arr;
    }
  } else {
    for (let i = 0; i < nTraj; i++) out[i] = src.slice(start[i], start[i + 1]);
  }
  return out;
}

export function summarizeAdvantages(adv: ArrayLike<number>): AdvantageSummary {
  const n = adv.length;
  if (n === 0) return { mean: 0, std: 0, min: 0, max: 0, nonZeroShare: 0 };
  let s = 0;
  let min = Infinity;
  let max = -Infinity;
  let nz = 0;
  for (let i = 0; i < n; i++) {
    const v = adv[i];
    s += v;
    if (v < min) min = v;
    if (v > max) max = v;
    if (Math.abs(v) > 1e-12) nz++;
  }
  const mean = s / n;
  let m2 = 0;
  for (let i = 0; i < n; i++) m2 += (adv[i] - mean) * (adv[i] - mean);
  return { mean, std: n > 1 ? Math.sqrt(m2 / (n - 1)) : 0, min, max, nonZeroShare: nz / n };
}

function commonDiagnostics(flat: FlatBatch, estimator: string, advantages: Float64Array, extra: ExtraDiagnostics): CreditDiagnostics {
  const scores = trajectoryScores(flat);
  let singletonCount = 0;
  let multi = 0;
  let zeroVar = 0;
  for (let g = 0; g < flat.nGroups; g++) {
    const a = flat.groupTrajStart[g];
    const b = flat.groupTrajStart[g + 1];
    if (b - a < 2) {
      singletonCount++;
      continue;
    }
    multi++;
    let same = true;
    for (let i = a + 1; i < b; i++) if (scores[i] !== scores[a]) same = false;
    if (same) zeroVar++;
  }
  const d: CreditDiagnostics = {
    estimator,
    counts: { groups: flat.nGroups, trajectories: flat.nTraj, turns: flat.nTurns },
    advantage: summarizeAdvantages(advantages),
    groups: { count: flat.nGroups, singletonCount, zeroVarianceShare: multi > 0 ? zeroVar / multi : 0 },
  };
  if (extra.anchorGroups) d.anchorGroups = extra.anchorGroups;
  if (extra.lossMask) d.lossMask = extra.lossMask;
  if (extra.zeroVariance && extra.zeroVariance.turns > 0) d.zeroVariance = extra.zeroVariance;
  if (extra.masked && extra.masked.turns > 0) d.masked = extra.masked;
  return d;
}
