// A stored step's estimator parameters must recompute: the credit views run lib/credit with them
// whenever the view's estimator is the step's own. So a step labelled with a TurnLens estimator has
// its params checked at ingest against that estimator's schema, after renaming the reference
// trainer's names to ours (gigpo: verl-agent's step_advantage_w is omega); an unknown name or a bad
// value is a 400 naming the field. A step labelled otherwise ("verl-agent:gae", a trainer's own
// name) keeps its params as given: no TurnLens estimator reads them.
import { CreditRequestError } from "../credit/errors";
import { estimators, isEstimatorId } from "../credit/registry";
import { parseParams } from "../credit/request";
import { InvalidInputError } from "./errors";

/**
 * `params` with the reference trainer's names of `estimator`'s parameters renamed to TurnLens's (the
 * same object when none is there), or the name given both ways with different values. Steps stored
 * before ingest renamed them are read through it too (lib/runs/credit-views.ts).
 */
export function renameTrainerParams(estimator: string, params: Record<string, unknown>): { params: Record<string, unknown> } | { clash: [string, string] } {
  if (!isEstimatorId(estimator)) return { params };
  let out = params;
  for (const [theirs, ours] of Object.entries(estimators[estimator].trainerNames ?? {})) {
    if (!Object.hasOwn(out, theirs)) continue;
    const { [theirs]: value, ...rest } = out;
    if (Object.hasOwn(rest, ours) && JSON.stringify(rest[ours]) !== JSON.stringify(value)) return { clash: [theirs, ours] };
    out = { ...rest, [ours]: value };
  }
  return { params: out };
}

/**
 * The params to store for a step under `estimator` (renamed to TurnLens's names), or throws
 * InvalidInputError naming `${root}.params.<name>`. The same object when nothing is renamed.
 */
export function stepParams<P extends Record<string, unknown> | null | undefined>(estimator: string | null | undefined, params: P, root: string): P {
  if (!estimator || !isEstimatorId(estimator) || params == null) return params;
  const renamed = renameTrainerParams(estimator, params);
  if ("clash" in renamed) {
    const [theirs, ours] = renamed.clash;
    const path = `${root}.params.${theirs}`;
    const message = `is estimator "${estimator}"'s ${ours} under the trainer's name, and params.${ours} says otherwise; give one`;
    throw new InvalidInputError(`invalid ${root}: ${path}: ${message}`, [{ path, message }]);
  }
  try {
    parseParams(estimators[estimator], renamed.params);
  } catch (e) {
    if (!(e instanceof CreditRequestError)) throw e;
    // lib/credit writes paths as params.a[0].b; the API's are dotted
    const path = `${root}.${(e.path || "params").replace(/\[(\d+)\]/g, ".$1")}`;
    const message = e.message.startsWith(`${e.path}: `) ? e.message.slice(e.path.length + 2) : e.message;
    throw new InvalidInputError(`invalid ${root}: ${path}: ${message}`, [{ path, message }]);
  }
  return renamed.params as P;
}
