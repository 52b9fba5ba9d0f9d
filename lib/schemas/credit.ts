// The credit views' contract: the routes' query schemas (`?estimator=&params=`, the overview's
// step and turn caps), the one "estimator with its params" type, and the response types the
// components draw. The SQL is in lib/db/credit.ts, the recompute and caching in lib/runs/credit-views.ts.
import { z } from "zod";
import type { Turn } from "../credit";
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
export const creditSourceQuery = (s: CreditSource): z.input<typeof creditSourceQuerySchema> => ({
  // an id the registry does not know is the server's to refuse (400 naming query.estimator)
  estimator: s.estimator as z.input<typeof creditSourceQuerySchema>["estimator"],
  params: s.params ? JSON.stringify(s.params) : undefined,
});

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
// The credit views' answers (lib/runs/credit-views.ts builds them): zod schemas, so the routes
// declare them and the OpenAPI document and the browser client take their types from here.

const maybe = z.number().nullable();
/** A table: rows x columns of `cell`. */
const grid = <T extends z.ZodType>(cell: T) => z.array(z.array(cell));
const paramsObject = z.record(z.string(), z.unknown());

export const turnTextSchema = z.object({
  observation: z.string().describe("The observation's first 120 characters (the whole text comes with the trajectory)."),
  action: z.string().describe("The action's first 160 characters."),
  observationLength: z.number().describe("Full length, to say when the excerpt is cut."),
  actionLength: z.number(),
});
export type TurnText = z.infer<typeof turnTextSchema>;

/** A step's batch statistics of the shown advantages (stored or recomputed). */
export const stepDiagnosticsSchema = z
  .object({
    step: z.number(),
    turns: z.number(),
    trajectories: z.number(),
    advMean: maybe.describe("Over all turns of the batch (turns without a stored advantage are left out)."),
    advStd: maybe,
    advMeanAbs: maybe,
    nonZeroShare: maybe,
    zeroVarianceShare: maybe.describe('Among task groups with 2+ trajectories, the share whose scores are all equal ("advantage collapse").'),
    singletonRatio: maybe.describe("GiGPO anchor groups: share with one member (null when turns carry no anchors)."),
    meanAnchorGroupSize: maybe,
    rewardVariance: maybe.describe("Mean over task groups (2+ trajectories) of the variance of their trajectories' scores."),
    allSuccessShare: maybe.describe("Among task groups with 2+ trajectories: every one succeeded (null without outcomes)."),
    allFailShare: maybe,
    mixedShare: maybe,
    collapseAccuracy: maybe.describe("Template-collapse probe: share of trajectories whose actions retrieve their own task's input (TF-IDF)."),
    collapseChance: maybe.describe("The probe's chance level (1 / tasks)."),
  })
  .meta({ id: "StepCreditDiagnostics" });
export type StepDiagnostics = z.infer<typeof stepDiagnosticsSchema>;

/** lib/credit's batch diagnostics of a recomputation (its CreditDiagnostics). */
export const creditDiagnosticsSchema = z
  .object({
    estimator: z.string(),
    counts: z.object({ groups: z.number(), trajectories: z.number(), turns: z.number() }),
    advantage: z.object({ mean: z.number(), std: z.number(), min: z.number(), max: z.number(), nonZeroShare: z.number() }),
    groups: z.object({ count: z.number(), singletonCount: z.number(), zeroVarianceShare: z.number() }),
    anchorGroups: z
      .object({
        count: z.number(),
        singletonRatio: z.number(),
        sizeHistogram: z.record(z.string(), z.number()).describe("Anchor-group size -> groups of that size."),
        meanAbsStep: z.number(),
      })
      .optional(),
    lossMask: z.object({ maskedTurns: z.number() }).optional(),
    zeroVariance: z.object({ turns: z.number() }).optional(),
    masked: z.object({ turns: z.number() }).optional(),
    rewardTransform: z.object({ kind: z.literal("gated"), tau: z.number(), gateOpenShare: z.number() }).optional(),
  })
  .meta({ id: "CreditDiagnostics" });

/** GET /runs/{id}/steps/{step}/groups/{groupId}/credit: one task group's heatmap slice. */
export const groupCreditSchema = z
  .object({
    runId: z.string(),
    step: z.number(),
    stepId: z.string(),
    group: z.object({ id: z.string(), uid: z.string(), envId: z.string(), taskSeed: z.number() }),
    trained: z
      .object({ estimator: z.string().nullable(), params: paramsObject.nullable() })
      .describe("The estimator and params stored with the step (used in training)."),
    source: z.enum(["stored", "recomputed"]),
    estimator: z.string().nullable().describe("The estimator whose values are shown (the trained one for stored values)."),
    params: paramsObject.nullable().describe("Parsed params with defaults (recomputed), or the stored training params."),
    paramsFrom: z.enum(["training", "request", "defaults", "stored"]),
    trajectories: z.array(
      z.object({ id: z.string(), index: z.number(), reward: z.number(), success: z.boolean(), length: z.number(), truncated: z.boolean() }),
    ),
    advantages: grid(maybe).describe("Trajectory x turn."),
    rewards: grid(z.number()),
    valid: grid(z.boolean()),
    anchorGroup: grid(maybe).describe(
      "Anchor-group id of each turn within this task group (null = no anchor); from the estimator when it groups anchors itself.",
    ),
    anchorKeys: z.array(z.string()).describe("Anchor text of each anchor-group id (first 160 characters)."),
    components: z
      .record(z.string(), grid(z.union([z.number(), z.string(), z.null()])))
      .describe("The estimator's per-turn components (recomputed only), trajectory x turn."),
    texts: grid(turnTextSchema),
    diagnostics: creditDiagnosticsSchema.nullable().describe("lib/credit's batch diagnostics of the recomputation (whole step); null for stored values."),
    stepDiagnostics: stepDiagnosticsSchema.describe("The step's batch statistics of the shown advantages, as in credit over training."),
    trainedDiagnostics: z.unknown().describe("What the trainer logged with the step."),
    fieldsAll: z.array(z.string()).describe("Credit turn fields present on every turn of the step (which estimators can run)."),
    fieldsAny: z.array(z.string()).describe("Credit turn fields present on some turn of the step."),
  })
  .meta({ id: "GroupCredit" });
export type GroupCredit = z.infer<typeof groupCreditSchema>;

/** GET /runs/{id}/credit: credit over training. */
export const creditOverviewSchema = z
  .object({
    runId: z.string(),
    source: z.enum(["stored", "recomputed"]),
    estimator: z.string().nullable(),
    trainedEstimators: z.array(z.string()).describe("Training estimators of the shown steps (usually one)."),
    totalSteps: z.number(),
    steps: z.array(z.number()).describe("The steps shown (all, or evenly sampled down to maxSteps), ascending."),
    turns: z.number().describe("Turn-index columns."),
    mean: grid(maybe).describe("Step x turn index: mean advantage."),
    meanAbs: grid(maybe).describe("Step x turn index: mean absolute advantage."),
    count: grid(z.number()).describe("Step x turn index: turns at that index."),
    entropy: grid(maybe).nullable().describe("Step x turn index: mean token entropy of the policy (stored with the turns); null when no turn has one."),
    byLength: z
      .object({ lengths: z.array(z.number()), mean: grid(maybe) })
      .describe("Mean advantage by episode length: the lengths present (columns), and step x length means."),
    diagnostics: z.array(stepDiagnosticsSchema),
  })
  .meta({ id: "CreditOverview" });
export type CreditOverview = z.infer<typeof creditOverviewSchema>;
