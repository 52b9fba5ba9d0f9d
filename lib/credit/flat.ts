// Flat, typed-array view of a Batch: one row per turn, built once per batch and shared by every
// estimator (see the "Performance" note in README.md). Row order is group-major, then trajectory,
// then turn: rows of trajectory i are [trajTurnStart[i], trajTurnStart[i + 1]).
import { anchorGroupKey, anchorKind, canonicalAnchorKey } from "./anchor-key";
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
  /**
   * Grouping key of every turn's anchor (`anchorGroupKey`): equal iff the anchors are the same
   * JSON value of the same type (the number 1 and the string "1" differ). A string is its own key.
   */
  anchorKeys(): string[];
  /** Canonical text of every turn's anchor (`canonicalAnchorKey`, "" when absent): similarity matching, display. */
  anchorTexts(): string[];
  /** Dense id of every turn's anchor by first appearance: equal iff `anchorKeys()` are equal. Shape (nTurns,). */
  anchorIds(): Int32Array;
  /** JSON type of every turn's anchor (`anchorKind`: 0 missing, 1 string, ...). Shape (nTurns,). */
  anchorKinds(): Uint8Array;
  /**
   * `buildResult` returns the flat columns (`CreditResult.columns`) and no per-trajectory arrays
   * (the CLI's fast path serialises the columns itself). Absent: false.
   */
  readonly columnar?: boolean;
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
  let allStrings = true; // and none starts with U+0000: each string is its own grouping key
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
        if (typeof a !== "string" || a.charCodeAt(0) === 0) allStrings = false;
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
  let texts: string[] | undefined;
  let ids: Int32Array | undefined;
  let kinds: Uint8Array | undefined;
  let agents: string[] | undefined;
  let turnTrajArr: Int32Array | undefined;
  let tokensArr: Float64Array | undefined;

  const anchorKeys = (): string[] => {
    if (!anchors) {
      if (allStrings)
        anchors = rawAnchors as string[]; // strings are their own grouping key
      else {
        const out: string[] = new Array(nTurns);
        for (let r = 0; r < nTurns; r++) out[r] = anchorGroupKey(rawAnchors[r]);
        anchors = out;
      }
    }
    return anchors;
  };

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
    anchorKeys,
    anchorTexts() {
      if (!texts) {
        if (allStrings) texts = rawAnchors as string[];
        else {
          const out: string[] = new Array(nTurns);
          for (let r = 0; r < nTurns; r++) out[r] = canonicalAnchorKey(rawAnchors[r]);
          texts = out;
        }
      }
      return texts;
    },
    anchorIds() {
      ids ??= denseIds(anchorKeys());
      return ids;
    },
    anchorKinds() {
      if (!kinds) {
        const out = new Uint8Array(nTurns);
        if (allStrings) out.fill(1);
        else for (let r = 0; r < nTurns; r++) out[r] = anchorKind(rawAnchors[r]);
        kinds = out;
      }
      return kinds;
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

/** Dense ids of string keys, numbered by first appearance: equal ids iff equal keys. */
export function denseIds(keys: readonly string[]): Int32Array {
  const out = new Int32Array(keys.length);
  const seen = new Map<string, number>();
  for (let r = 0; r < keys.length; r++) {
    const k = keys[r];
    let id = seen.get(k);
    if (id === undefined) {
      id = seen.size;
      seen.set(k, id);
    }
    out[r] = id;
  }
  return out;
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
