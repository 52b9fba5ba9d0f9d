// Failure clusters of a run's step range: the sample lib/db/failure-trajectories.ts reads, clustered
// by lib/credit/failure-clusters.ts. Steps never change, so an answer is kept by the steps it read.
import { assertRunExists, getRawDb, type RawDb } from "../db/raw";
import { failedTrajectories, spreadSteps } from "../db/failure-trajectories";
import { clusterFailures } from "../credit/failure-clusters";
import type { FailureClusters } from "../schemas/failure-clusters";

/** Steps read in a range, and failed trajectories a step: 12 x 20 = 240 at most (docs/alerts.md: under 300 ms cold at 6,400 turns a step). */
export const MAX_STEPS = 12;
export const PER_STEP = 20;

const cache = new Map<string, FailureClusters>();
const CACHED = 64;

export function failureClusters(runId: string, q: { from?: number; to?: number; maxClusters: number }, db: RawDb = getRawDb()): FailureClusters {
  assertRunExists(runId, db);
  const steps = spreadSteps(runId, q.from ?? 0, q.to ?? 1_000_000_000, MAX_STEPS, db);
  const key = `${runId}|${q.maxClusters}|${steps.map((s) => s.id).join(",")}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const rows = steps.flatMap((s) => failedTrajectories(s, PER_STEP, db));
  const byId = new Map(rows.map((r) => [r.id, r]));
  const clusters = clusterFailures(rows, { maxClusters: q.maxClusters, steps: steps.map((s) => s.step) }).map((c) => ({
    ...c,
    examples: c.examples.map((id) => ({ id, step: byId.get(id)!.step, groupId: byId.get(id)!.groupId })),
  }));
  const out: FailureClusters = { runId, steps: steps.map((s) => s.step), perStepLimit: PER_STEP, trajectories: rows.length, clusters };
  if (cache.size >= CACHED) cache.delete(cache.keys().next().value!);
  cache.set(key, out);
  return out;
}
