// Flat, typed-array view of a Batch: one row per turn, built once per batch and shared by every
// estimator (see the "Performance" note in README.md). Row order is group-major, then trajectory,
// then turn: rows of trajectory i are [trajTurnStart[i], trajTurnStart[i + 1]).
import { canonicalAnchorKey } from "./anchor-key";
import type { AnchorValue, Batch, Turn } from "./types";

/** Numeric turn fields that estimators may read as a Float64Array (NaN where absent). */
export type NumericTurnField = "value" | "q1" | "q2" | "v2" | "infoGain" | "segment" | "highValue";

export interface FlatBatch {
  readonly batch: Batch;
  readonly nGroups: number;
  readonly nTraj: number;
  readonly nTurns: number;
  /** Trajectories of group g: [groupTrajStart[g], groupTrajStart[g + 1]). Shape (nGroups + 1,). */
  readonly groupTrajStart: Int32Array;
  /** Rows of trajectory i: [trajTurnStart[i], trajTurnStart[i + 1]). Shape (nTraj + 1,). */
  readonly trajTurnStart: Int32Array;
  /** Group index of each trajectory. Shape (nTraj,). */
  readonly trajGroup: Int32Array;
  /** Env reward of each turn. Shape (nTurns,). */
  readonly reward: Float64Array;
  /** Valid response tokens of each turn (default 1). Shape (nTurns,). Built on first access. */
  readonly tokens: Float64Array;
  /** 1 if the action was not admissible. Shape (nTurns,). */
  readonly invalid: Uint8Array;
  /** Trajectory ids in row order of trajectories. */
  readonly trajIds: string[];
  /** Whether the result carries per-turn components (false: `components: {}`, nothing sliced). */
  readonly withComponents: boolean;
  /** Lazily built per-field arrays (cached). */
  numeric(field: NumericTurnField): Float64Array;
  /** Judge scores; NaN for a failed judgement (null). */
  judgeScore(): Float64Array;
  /** 1 where the turn carries `toolResult: true`. */
  toolResult(): Uint8Array;
  /** Canonical anchor key of every turn ("" when absent). */
  anchorKeys(): string[];
  /** Agent key of every turn ("" when absent); numbers and strings are kept apart ("n:1" vs "s:1"). */
  agentKeys(): string[];
  /** Trajectory index of every row. Shape (nTurns,). */
  turnTraj(): Int32Array;
}

/**
 * Flatten a batch: one pass over the turn objects for the structure, rewards, invalid flags and
 * raw anchors; other fields are read on first use and kept on the returned object. Not cached
 * across calls, so a batch mutated between two computations is read afresh.
 */
export function flatten(batch: Batch, withComponents = true): FlatBatch {
  const groups = batch.groups;
  const nGroups = groups.length;
  let nTraj = 0;
  let nTurns = 0;
  for (let g = 0; g < nGroups; g++) {
    const trajs = groups[g].trajectories;
    nTraj += trajs.length;
    for (let i = 0; i < trajs.length; i++) nTurns += trajs[i].turns.length;
  }
  const groupTrajStart = new Int32Array(nGroups + 1);
  const trajTurnStart = new Int32Array(nTraj + 1);
  const trajGroup = new Int32Array(nTraj);
  const reward = new Float64Array(nTurns);
  const invalid = new Uint8Array(nTurns);
  const trajIds: string[] = new Array(nTraj);
  // raw anchors, read in the same pass (the turn object is in cache); canonicalised on demand
  const rawAnchors: (AnchorValue | undefined)[] = new Array(nTurns);
  let allStrings = true;
  let ti = 0;
  let row = 0;
  for (let g = 0; g < nGroups; g++) {
    groupTrajStart[g] = ti;
    const trajs = groups[g].trajectories;
    for (let i = 0; i < trajs.length; i++) {
      const traj = trajs[i];
      trajGroup[ti] = g;
      trajIds[ti] = traj.id;
      trajTurnStart[ti] = row;
      const turns = traj.turns;
      for (let t = 0; t < turns.length; t++) {
        const turn = turns[t];
        reward[row] = turn.reward;
        invalid[row] = turn.invalid === true ? 1 : 0;
        const a = turn.anchor;
        rawAnchors[row] = a;
        if (typeof a !== "string") allStrings = false;
        row++;
      }
      ti++;
    }
  }
  groupTrajStart[nGroups] = ti;
  trajTurnStart[nTraj] = row;

  const numericCache = new Map<NumericTurnField, Float64Array>();
  let judge: Float64Array | undefined;
  let tool: Uint8Array | undefined;
  let anchors: string[] | undefined;
  let agents: string[] | undefined;
  let turnTrajArr: Int32Array | undefined;
  let tokensArr: Float64Array | undefined;

  const eachTurn = (fn: (turn: Turn, row: number) => void) => {
    let r = 0;
    for (let g = 0; g < nGroups; g++) {
      const trajs = groups[g].trajectories;
      for (let i = 0; i < trajs.length; i++) {
        const turns = trajs[i].turns;
        for (let t = 0; t < turns.length; t++) fn(turns[t], r++);
      }
    }
  };

  return {
    batch,
    nGroups,
    nTraj,
    nTurns,
    groupTrajStart,
    trajTurnStart,
    trajGroup,
    reward,
    get tokens() {
      if (!tokensArr) {
        const out = new Float64Array(nTurns);
        eachTurn((turn, r) => {
          out[r] = turn.tokens === undefined ? 1 : turn.tokens;
        });
        tokensArr = out;
      }
      return tokensArr;
    },
    invalid,
    trajIds,
    withComponents,
    numeric(field) {
      let arr = numericCache.get(field);
      if (!arr) {
        const out = new Float64Array(nTurns);
        eachTurn((turn, r) => {
          const v = turn[field];
          out[r] = typeof v === "number" ? v : NaN;
        });
        numericCache.set(field, out);
        arr = out;
      }
      return arr;
    },
    judgeScore() {
      if (!judge) {
        const out = new Float64Array(nTurns);
        eachTurn((turn, r) => {
          out[r] = typeof turn.judgeScore === "number" ? turn.judgeScore : NaN;
        });
        judge = out;
      }
      return judge;
    },
    toolResult() {
      if (!tool) {
        const out = new Uint8Array(nTurns);
        eachTurn((turn, r) => {
          out[r] = turn.toolResult === true ? 1 : 0;
        });
        tool = out;
      }
      return tool;
    },
    anchorKeys() {
      if (!anchors) {
        if (allStrings) anchors = rawAnchors as string[]; // strings are their own canonical key
        else {
          const out: string[] = new Array(nTurns);
          for (let r = 0; r < nTurns; r++) {
            const a = rawAnchors[r];
            out[r] = typeof a === "string" ? a : canonicalAnchorKey(a);
          }
          anchors = out;
        }
      }
      return anchors;
    },
    agentKeys() {
      if (!agents) {
        const out: string[] = new Array(nTurns);
        eachTurn((turn, r) => {
          const a = turn.agent;
          out[r] = a === undefined ? "" : typeof a === "number" ? "n:" + a : "s:" + a;
        });
        agents = out;
      }
      return agents;
    },
    turnTraj() {
      if (!turnTrajArr) {
        const out = new Int32Array(nTurns);
        for (let i = 0; i < nTraj; i++) out.fill(i, trajTurnStart[i], trajTurnStart[i + 1]);
        turnTrajArr = out;
      }
      return turnTrajArr;
    },
  };
}

/** Undiscounted score R_i = sum_t r_t of every trajectory. Shape (nTraj,). */
export function trajectoryScores(flat: FlatBatch, reward: Float64Array = flat.reward): Float64Array {
  const out = new Float64Array(flat.nTraj);
  const start = flat.trajTurnStart;
  for (let i = 0; i < flat.nTraj; i++) {
    let s = 0;
    for (let r = start[i]; r < start[i + 1]; r++) s += reward[r];
    out[i] = s;
  }
  return out;
}
