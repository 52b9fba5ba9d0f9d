// Public entry of the credit-assignment library (see README.md).
import { applyRewardTransform } from "./reward-transform";
import { CreditRequestError, validateRequest } from "./request";
import type { CreditDiagnostics, TrajectoryCredit } from "./result";
import type { Batch } from "./types";

export { canonicalAnchorKey, canonicalJson } from "./anchor-key";
export { flatten, type FlatBatch } from "./flat";
export { buildAnchorGroups, groupAnchorIds, renumberGroups } from "./gigpo";
export { estimators, getEstimator, isEstimatorId, ESTIMATOR_IDS, type EstimatorId, type EstimatorSpec } from "./registry";
export {
  CreditRequestError,
  creditRequestSchema,
  parseRequestText,
  validateRequest,
  type CreditRequest,
} from "./request";
export { applyRewardTransform, rewardTransformSchema, type RewardTransform } from "./reward-transform";
export type { CreditResult, CreditDiagnostics, TrajectoryCredit, AnchorGroupDiagnostics } from "./result";
export { broadcastToTokens } from "./tokens";
export type { AnchorValue, Batch, Group, Trajectory, Turn } from "./types";

/** What the CLI prints and the HTTP API returns. */
export interface CreditResponse {
  /** In request order (groups, then trajectories). */
  trajectories: TrajectoryCredit[];
  diagnostics: CreditDiagnostics;
}

export interface RunCreditOptions {
  /** Overrides the request's `output`: "advantages" leaves every trajectory's `components` empty. */
  output?: "full" | "advantages";
}

/**
 * Validate a request, apply the optional reward transform, run the estimator.
 * Throws CreditRequestError (one-line message with the field path) on a bad request.
 */
export function runCredit(request: unknown, options: RunCreditOptions = {}): CreditResponse {
  return runCreditWithParams(request, options).response;
}

/** `runCredit`, also returning the estimator's params as parsed (defaults applied): the one parse, for callers that show them. */
export function runCreditWithParams(request: unknown, options: RunCreditOptions = {}): { response: CreditResponse; params: Record<string, unknown> } {
  const { request: req, spec, params } = validateRequest(request);
  const output = options.output ?? req.output ?? "full";
  let batch: Batch = { groups: req.groups };
  let transformStats: CreditDiagnostics["rewardTransform"];
  if (req.rewardTransform) {
    const t = applyRewardTransform(batch, req.rewardTransform);
    batch = t.batch;
    transformStats = t.stats;
  }
  const result = spec.compute(batch, params, { components: output === "full" });
  for (const t of result.trajectories) {
    const adv = t.advantages;
    for (let i = 0; i < adv.length; i++) {
      if (!Number.isFinite(adv[i]))
        throw new CreditRequestError(`trajectory "${t.id}": the estimator produced a non-finite advantage (check the inputs' magnitude)`);
    }
  }
  const diagnostics = transformStats ? { ...result.diagnostics, rewardTransform: transformStats } : result.diagnostics;
  return { response: { trajectories: result.trajectories, diagnostics }, params };
}
