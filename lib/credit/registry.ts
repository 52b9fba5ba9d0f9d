// Estimator registry: id -> spec (title, paper, needed turn fields, params schema, compute).
// The launch form and the HTTP API read it; callers never special-case an estimator.
import { archer } from "./archer";
import { drgrpo } from "./drgrpo";
import { gae } from "./gae";
import { gigpo } from "./gigpo";
import { grpo } from "./grpo";
import { hiper } from "./hiper";
import { igpo } from "./igpo";
import { mapo } from "./mapo";
import { mars } from "./mars";
import { mtgrpo } from "./mtgrpo";
import { reinforcepp } from "./reinforcepp";
import { reinforceppBaseline } from "./reinforcepp-baseline";
import { rloo } from "./rloo";
import { ESTIMATOR_IDS, type EstimatorId, type EstimatorSpec } from "./spec";

export type { EstimatorId, EstimatorSpec } from "./spec";
export { ESTIMATOR_IDS } from "./spec";

function register(specs: EstimatorSpec[]): Record<EstimatorId, EstimatorSpec> {
  const out = {} as Record<EstimatorId, EstimatorSpec>;
  for (const s of specs) {
    if (Object.hasOwn(out, s.id)) throw new Error(`duplicate estimator id "${s.id}"`);
    out[s.id] = s;
  }
  const missing = ESTIMATOR_IDS.filter((id) => !out[id]);
  if (missing.length > 0) throw new Error(`estimators without an implementation: ${missing.join(", ")}`);
  return out;
}

/** Every estimator by id, in the documented order. */
export const estimators: Record<EstimatorId, EstimatorSpec> = register([
  grpo,
  drgrpo,
  rloo,
  reinforcepp,
  reinforceppBaseline,
  gae,
  gigpo,
  mapo,
  mtgrpo,
  igpo,
  mars,
  hiper,
  archer,
] as EstimatorSpec[]);

export function isEstimatorId(id: string): id is EstimatorId {
  return Object.hasOwn(estimators, id);
}

/** The spec of `id`; throws an Error listing the known ids when `id` is unknown. */
export function getEstimator(id: string): EstimatorSpec {
  if (!isEstimatorId(id)) {
    throw new Error(`unknown estimator "${id}"; known: ${ESTIMATOR_IDS.join(", ")}`);
  }
  return estimators[id];
}
