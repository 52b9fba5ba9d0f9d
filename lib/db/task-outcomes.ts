// A run's outcome per task over all its steps: the comparison of two runs on the same tasks
// (lib/runs/task-compare.ts) reads it. One grouped query over the run's trajectories.
import { getRawDb, type RawDb } from "./raw";

export interface TaskRow {
  envId: string;
  taskSeed: number;
  uid: string;
  trajectories: number;
  successes: number;
  /** the first success, else the first failure (trajectory ids are time-ordered) */
  trajectoryId: string;
}

export function taskOutcomes(runId: string, db: RawDb = getRawDb()): TaskRow[] {
  const rows = db
    .prepare(
      `SELECT g."envId", g."taskSeed", g."uid", COUNT(*), SUM(CASE WHEN t."success" THEN 1 ELSE 0 END),
              MIN(CASE WHEN t."success" THEN t."id" END), MIN(t."id")
       FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id"
       WHERE g."runId" = ? GROUP BY g."envId", g."taskSeed", g."uid"`,
    )
    .raw()
    .all(runId) as [string, number, string, number | string, number | string, string | null, string][];
  return rows.map(([envId, taskSeed, uid, n, wins, firstWin, first]) => ({
    envId,
    taskSeed: Number(taskSeed),
    uid,
    trajectories: Number(n),
    successes: Number(wins),
    trajectoryId: firstWin ?? first,
  }));
}
