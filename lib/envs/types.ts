// The one interface every multi-turn text environment implements (lib/envs/*).
// Environments are pure TypeScript, deterministic from the seed given to reset().
import type { z } from "zod";

/** What step() reports about the action it was given. */
export interface StepInfo {
  /** The action parsed to an admissible/legal command; false leaves the state unchanged. */
  valid: boolean;
  /** The episode's task is accomplished (set on the final turn of a successful episode). */
  success: boolean;
  /** The canonical parsed action (e.g. "left", "search[red shoes]"), null when unparseable. */
  action: string | null;
  /** Environment-specific extras (e.g. "boxesOnTarget"); must be JSON-serialisable. */
  [extra: string]: unknown;
}

export interface StepResult {
  observation: string;
  /** Reward for the acting agent after this turn. */
  reward: number;
  /** The episode ended (success or failure). */
  done: boolean;
  /** The episode hit maxTurns without ending. */
  truncated: boolean;
  info: StepInfo;
  /** Two-player games: reward per player index, in player order. */
  rewards?: number[];
}

/** A structured view of the state for the UI to draw. */
export type EnvView =
  | { kind: "grid"; cells: string[][]; legend: Record<string, string>; caption?: string }
  | { kind: "text"; text: string }
  | { kind: "fields"; fields: Record<string, string | number | boolean | null> };

export interface Env {
  /** Registry id, e.g. "sokoban". */
  readonly id: string;
  readonly maxTurns: number;
  /** Starts a new episode; returns the first observation text. Same seed, same episode. */
  reset(seed: number): string;
  /** Applies the agent's raw text; never throws on malformed text (marks it invalid). */
  step(actionText: string): StepResult;
  /** The admissible actions in the current state, or null where the action space is open (e.g. free-text search). */
  admissibleActions(): string[] | null;
  /** Canonical key of the current state (for GiGPO anchor groups): equal states, equal keys. */
  anchorKey(): string;
  /**
   * Canonical key of the task instance the last reset(seed) generated (map, level, puzzle,
   * goal, deal...): two seeds that generate the same instance give the same key, different
   * instances different keys. Held-out sets compare these, not seeds (lib/envs/heldout.ts).
   */
  instanceKey(): string;
  /** System prompt / instructions text for the agent. */
  instructions(): string;
  view(): EnvView;
  /** Ground-truth answer for information-gain rewards, null where none exists. */
  goldAnswer(): string | null;
  /** Two-player games: index of the player to act now; null for single-agent environments. */
  currentAgent(): number | null;
  /** Number of agents (1 for single-agent environments). */
  readonly numAgents: number;
  /**
   * Optional (lib/envs addition): a finite candidate action set for the uniformly random
   * baseline policy where admissibleActions() is open (null) or leaves out open actions
   * (generated search queries, candidate answers). Not a restriction on what step() accepts.
   */
  sampleActions?(): string[];
}

export interface EnvSpec<C = unknown> {
  id: string;
  title: string;
  description: string;
  /** zod schema of the config with defaults: configSchema.parse({}) gives the default config. */
  configSchema: z.ZodType<C>;
  create(config: C): Env;
}
