// The failed trajectories that failure clusters read (lib/runs/failure-clusters.ts): a bounded
// sample of a step range, the same on every call (steps evenly spread, the first failures of each
// step by task uid and position), with their actions only.
import { getRawDb, type RawDb } from "./raw";
import { readTurnTexts } from "./trajectory-texts";

export interface FailedTrajectoryRow {
  id: string;
  step: number;
  groupId: string;
  actions: string[];
}

/** At most `maxSteps` of the run's steps in [from, to], evenly spread, first and last included. */
export function spreadSteps(runId: string, from: number, to: number, maxSteps: number, db: RawDb = getRawDb()): { id: string; step: number }[] {
  const all = db.prepare(`SELECT "id","step" FROM "RolloutStep" WHERE "runId" = ? AND "step" >= ? AND "step" <= ? ORDER BY "step"`).all(runId, from, to) as {
    id: string;
    step: number;
  }[];
  if (all.length <= maxSteps) return all;
  const picked = new Set<number>();
  for (let i = 0; i < maxSteps; i++) picked.add(Math.round((i * (all.length - 1)) / (maxSteps - 1)));
  return [...picked].sort((a, b) => a - b).map((i) => all[i]);
}

/** Up to `limit` failed trajectories of one step, with their actions. */
export function failedTrajectories(step: { id: string; step: number }, limit: number, db: RawDb = getRawDb()): FailedTrajectoryRow[] {
  const rows = db
    .prepare(
      `SELECT t."id", g."id" AS "groupId", t."turnTexts" FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id"
       WHERE g."stepId" = ? AND CAST(t."success" AS INTEGER) = 0 ORDER BY g."uid", t."index" LIMIT ?`,
    )
    .all(step.id, limit) as { id: string; groupId: string; turnTexts: Uint8Array }[];
  const texts = readTurnTexts(rows, db);
  return rows.map((r, i) => ({ id: r.id, step: step.step, groupId: r.groupId, actions: texts[i].action }));
}
