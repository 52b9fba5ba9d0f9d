// Typed batches for the credit-assignment estimators (semantics: lib/credit/README.md).
// A batch is groups of trajectories; a group (uid) holds the G rollouts of one task.

/** A JSON value used as an anchor (state) key; canonicalised by lib/credit/anchor-key.ts. */
export type AnchorValue = string | number | boolean | null | AnchorValue[] | { [k: string]: AnchorValue };

export interface Turn {
  /** Environment reward after this turn. */
  reward: number;
  /** Canonical key (or JSON value) of the observation the action was taken in. */
  anchor?: AnchorValue;
  /** The action was not admissible. */
  invalid?: boolean;
  /** Player id for multi-agent games. */
  agent?: string | number;
  /** Critic estimate V(s_t). */
  value?: number;
  /** Q estimates for ArCHer (min of the two heads is used). */
  q1?: number;
  q2?: number;
  v2?: number;
  /** Information gain of this turn (IGPO). */
  infoGain?: number;
  /** Judge (process) score of this turn (MAPO); null = failed judgement. */
  judgeScore?: number | null;
  /** Subgoal segment id (HiPER). */
  segment?: number;
  /** Number of valid response tokens (for token-weighted whitening); default 1. */
  tokens?: number;
  /** MT-GRPO: the environment answered this turn with a tool result (first such turn ends the tool phase). */
  toolResult?: boolean;
  /** HiPER: high-level critic V_high(s) at this turn's state; read at the first turn of each segment. */
  highValue?: number;
}

export interface Trajectory {
  id: string;
  turns: Turn[];
  /** The trajectory ended by truncation (bootstraps 0). */
  truncated?: boolean;
  /** Environment tag (MARS code variant groups by it). */
  envTag?: string;
}

export interface Group {
  uid: string;
  trajectories: Trajectory[];
}

export interface Batch {
  groups: Group[];
}
