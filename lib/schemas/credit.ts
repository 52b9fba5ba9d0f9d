// The credit views' contract: the routes' query schemas (`?estimator=&params=`, the overview's
// step and turn caps), the one "estimator with its params" type, and the response types the
// components draw. The SQL is in lib/db/credit.ts, the recompute and caching in lib/runs/credit-views.ts.
import { z } from "zod";
import type { CreditDiagnostics, Turn } from "../credit";
import { ESTIMATOR_IDS } from "../credit/registry";
import { queryInt } from "./common";
import type { JsonSchema } from "./json-schema";
import type { TurnInput } from "./rollouts";

const paramsJson = z
  .string()
  .max(1000)
  .transform((s, ctx) => {
    try {
      const v = JSON.parse(s);
      if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      /* reported below */
    }
    ctx.addIssue({ code: "custom", message: 'must be a JSON object of estimator parameters, e.g. {"gamma":0.9}' });
    return z.NEVER;
  });

/** `?estimator=&params=`: which advantages to show. */
export const creditSourceQuerySchema = z
  .object({
    estimator: z
      .enum(["stored", ...ESTIMATOR_IDS])
      .optional()
      .describe("Estimator id to recompute with (lib/credit registry); omitted or `stored` = the advantages stored with the turns."),
    params: paramsJson.optional().describe("The estimator's parameters as JSON; omitted = the training params for the training estimator, else the defaults."),
  })
  .strict();

export const creditOverviewQuerySchema = creditSourceQuerySchema
  .extend({
    maxSteps: queryInt(1, 1000).default(50).describe("Show at most this many training steps (evenly sampled)."),
    maxTurns: queryInt(1, 1000).default(200).describe("Turn-index columns."),
  })
  .strict();

/**
 * Whose advantages to show: the stored ones (`estimator` undefined or "stored") or a recomputation
 * with a lib/credit estimator; `params` omitted = the step's training params when it is the
 * training estimator, else the defaults. The one shape from the URL to the service.
 */
export interface CreditSource {
  estimator?: string;
  params?: Record<string, unknown>;
}

export const isStoredSource = (s: CreditSource): boolean => !s.estimator || s.estimator === "stored";

/**
 * A source from a page URL's estimator and params keys (`est=`, `p=` JSON), parsed once here; a
 * `p` that is not a JSON object is ignored (the page shows the defaults; the API would answer 400).
 */
export function creditSourceFromUrl(estimator: string | null | undefined, paramsJson: string | null | undefined): CreditSource {
  if (!estimator || estimator === "stored") return {};
  let params: Record<string, unknown> | undefined;
  try {
    const v = paramsJson ? JSON.parse(paramsJson) : undefined;
    if (v && typeof v === "object" && !Array.isArray(v)) params = v;
  } catch {
    /* ignored, see above */
  }
  return params ? { estimator, params } : { estimator };
}

/** The HTTP query of a source (the inverse of `creditSourceQuerySchema`). */
export const creditSourceQuery = (s: CreditSource) => ({ estimator: s.estimator, params: s.params ? JSON.stringify(s.params) : undefined });

/** An estimator as the UI offers it (made by lib/runs/catalog.ts from the lib/credit registry). */
export interface EstimatorInfo {
  id: string;
  title: string;
  paper: { title: string; year: number; url: string };
  /** turn fields beyond `reward` it needs (e.g. value, judgeScore) */
  needs: string[];
  /** its params as JSON Schema, for generated forms */
  paramsSchema: JsonSchema;
}

// ---------------------------------------------------------------- the turn lib/credit reads

/** lib/credit turn fields that travel in a stored turn's `info` (a trainer's provider or an importer puts them there). */
export const INFO_CREDIT_FIELDS = ["value", "q1", "q2", "v2", "infoGain", "judgeScore", "segment", "toolResult", "highValue"] as const;

/** What lib/credit reads of a stored turn: the ingest turn shape (lib/schemas/rollouts). */
export type StoredCreditTurn = Pick<TurnInput, "reward" | "valid" | "anchor" | "agent" | "tokenCount" | "info">;

/**
 * The one mapping from the stored turn (`valid`, `tokenCount`, inputs in `info`) to lib/credit's
 * Turn (`invalid`, `tokens`, inputs as fields). The trainer assigns credit to the turns it is about
 * to store, and the credit views recompute from the stored ones, through this same function, so a
 * recomputation sees what training saw. A turn counts at least one token (an exploration action
 * has none sampled; lib/credit's default is 1).
 */
export function creditTurn(u: StoredCreditTurn): Turn {
  const turn: Turn = { reward: u.reward };
  if (u.anchor !== null && u.anchor !== undefined) turn.anchor = u.anchor;
  if (u.valid === false) turn.invalid = true;
  if (u.agent !== null && u.agent !== undefined) turn.agent = u.agent;
  if (u.tokenCount !== null && u.tokenCount !== undefined) turn.tokens = Math.max(1, u.tokenCount);
  if (u.info) {
    const rec = turn as unknown as Record<string, unknown>;
    for (const f of INFO_CREDIT_FIELDS) {
      const v = u.info[f];
      if (f === "toolResult" ? typeof v === "boolean" : typeof v === "number" || (f === "judgeScore" && v === null)) rec[f] = v;
    }
  }
  return turn;
}

// ---------------------------------------------------------------- responses

export interface TurnText {
  /** the observation's first 120 characters (the whole text comes with the trajectory) */
  observation: string;
  /** the action's first 160 characters */
  action: string;
  /** full lengths, to say when an excerpt is cut */
  observationLength: number;
  actionLength: number;
}

export interface StepDiagnostics {
  step: number;
  turns: number;
  trajectories: number;
  /** advantages over all turns of the batch (turns without a stored advantage are left out) */
  advMean: number | null;
  advStd: number | null;
  advMeanAbs: number | null;
  nonZeroShare: number | null;
  /** among task groups with 2+ trajectories, the share whose scores are all equal ("advantage collapse") */
  zeroVarianceShare: number | null;
  /** GiGPO anchor groups: share with one member (null when turns carry no anchors) */
  singletonRatio: number | null;
  meanAnchorGroupSize: number | null;
  /** mean over task groups (2+ trajectories) of the variance of their trajectories' scores */
  rewardVariance: number | null;
  /** among task groups with 2+ trajectories: every one succeeded / every one failed / mixed (null without outcomes) */
  allSuccessShare: number | null;
  allFailShare: number | null;
  mixedShare: number | null;
  /** template-collapse probe: share of trajectories whose actions retrieve their own task's input (TF-IDF), and chance (1 / tasks) */
  collapseAccuracy: number | null;
  collapseChance: number | null;
}

/** GET /runs/{id}/steps/{step}/groups/{groupId}/credit: one task group's heatmap slice. */
export interface GroupCredit {
  runId: string;
  step: number;
  stepId: string;
  group: { id: string; uid: string; envId: string; taskSeed: number };
  /** the estimator and params stored with the step (used in training) */
  trained: { estimator: string | null; params: Record<string, unknown> | null };
  source: "stored" | "recomputed";
  /** the estimator whose values are shown (the trained one for stored values) */
  estimator: string | null;
  /** parsed params with defaults (recomputed), or the stored training params */
  params: Record<string, unknown> | null;
  paramsFrom: "training" | "request" | "defaults" | "stored";
  trajectories: { id: string; index: number; reward: number; success: boolean; length: number; truncated: boolean }[];
  /** trajectory x turn */
  advantages: (number | null)[][];
  rewards: number[][];
  valid: boolean[][];
  /** anchor-group id of each turn within this task group (null = no anchor); from the estimator when it groups anchors itself */
  anchorGroup: (number | null)[][];
  /** anchor text of each anchor-group id (first 160 characters) */
  anchorKeys: string[];
  /** the estimator's per-turn components (recomputed only), trajectory x turn */
  components: Record<string, (number | string | null)[][]>;
  texts: TurnText[][];
  /** lib/credit's batch diagnostics of the recomputation (whole step), or null for stored values */
  diagnostics: CreditDiagnostics | null;
  /** the step's batch statistics of the shown advantages (stored or recomputed), as in credit over training */
  stepDiagnostics: StepDiagnostics;
  /** what the trainer logged with the step */
  trainedDiagnostics: unknown;
  /** credit turn fields present on every turn / on some turn of the step (which estimators can run) */
  fieldsAll: string[];
  fieldsAny: string[];
}

/** GET /runs/{id}/credit: credit over training. */
export interface CreditOverview {
  runId: string;
  source: "stored" | "recomputed";
  estimator: string | null;
  /** training estimator per shown step is in `trainedEstimators` (usually one) */
  trainedEstimators: string[];
  totalSteps: number;
  /** the steps shown (all, or evenly sampled down to maxSteps), ascending */
  steps: number[];
  /** turn-index columns */
  turns: number;
  /** step x turn index: mean and mean absolute advantage, count of turns at that index */
  mean: (number | null)[][];
  meanAbs: (number | null)[][];
  count: number[][];
  /** step x turn index: mean token entropy of the policy (stored with the turns); null when no turn has one */
  entropy: (number | null)[][] | null;
  /** mean advantage by episode length: the lengths present (columns), and step x length means */
  byLength: { lengths: number[]; mean: (number | null)[][] };
  diagnostics: StepDiagnostics[];
}
