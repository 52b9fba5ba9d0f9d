// The one shape every estimator has (style note 1: callers never special-case an estimator).
import type { z } from "zod";
import { flatten, type FlatBatch } from "./flat";
import type { CreditResult } from "./result";
import type { Batch, Turn } from "./types";

export const ESTIMATOR_IDS = [
  "grpo",
  "drgrpo",
  "rloo",
  "reinforcepp",
  "reinforcepp_baseline",
  "gae",
  "gigpo",
  "mapo",
  "mtgrpo",
  "igpo",
  "mars",
  "hiper",
  "archer",
] as const;

export type EstimatorId = (typeof ESTIMATOR_IDS)[number];

export interface PaperRef {
  title: string;
  authors?: string;
  year: number;
  url: string;
}

/** Where a turn sits, for fields that are needed only on some turns. */
export interface TurnContext {
  turnIndex: number;
  /** Number of turns of the trajectory. */
  length: number;
  /** Last turn of its trajectory. */
  last: boolean;
  /** First turn of a HiPER segment (first turn, or `segment` differs from the previous turn's). */
  segmentStart: boolean;
}

export interface ComputeOptions {
  /** Per-turn components in the result (default true). */
  components?: boolean;
}

export interface EstimatorSpec<S extends z.ZodObject = z.ZodObject> {
  id: EstimatorId;
  title: string;
  paper: PaperRef;
  /** Turn fields the estimator needs (on every turn unless `neededOn` narrows it). */
  needs: (keyof Turn)[];
  /** Optional turn fields it reads when present. */
  reads?: (keyof Turn)[];
  /** For a field in `needs`: the turns on which it is required (default: all). */
  neededOn?: Partial<Record<keyof Turn, (ctx: TurnContext) => boolean>>;
  /** Parameters, every field with .default() and .describe(); the launch form renders these. */
  paramsSchema: S;
  /**
   * The reference trainer's names of parameters that are named otherwise here (verl-agent's
   * `step_advantage_w` is gigpo's `omega`): a step's params given in them are stored under ours.
   */
  trainerNames?: Record<string, string>;
  /**
   * Compute per-turn advantages. `params` is parsed with `paramsSchema` (defaults applied);
   * `options.components: false` leaves every trajectory's `components` empty (faster, smaller).
   */
  compute(batch: Batch, params?: unknown, options?: ComputeOptions): CreditResult;
  /** `compute` on rows already flattened (the CLI's fast path builds them straight from the request bytes). */
  computeFlat(flat: FlatBatch, params?: unknown): CreditResult;
}

/** Build a spec whose `compute` parses params and flattens the batch once. */
export function defineEstimator<S extends z.ZodObject>(def: {
  id: EstimatorId;
  title: string;
  paper: PaperRef;
  needs: (keyof Turn)[];
  reads?: (keyof Turn)[];
  neededOn?: EstimatorSpec["neededOn"];
  paramsSchema: S;
  trainerNames?: Record<string, string>;
  run(flat: FlatBatch, params: z.output<S>): CreditResult;
}): EstimatorSpec<S> {
  const { run, ...rest } = def;
  return {
    ...rest,
    compute(batch: Batch, params?: unknown, options?: ComputeOptions) {
      const parsed = def.paramsSchema.parse(params ?? {}) as z.output<S>;
      return run(flatten(batch, options?.components !== false), parsed);
    },
    computeFlat(flat: FlatBatch, params?: unknown) {
      return run(flat, def.paramsSchema.parse(params ?? {}) as z.output<S>);
    },
  };
}
