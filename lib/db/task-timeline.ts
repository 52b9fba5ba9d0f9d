// One task across training (GET /tasks/timeline): per step of each run, the task's group with each
// trajectory's outcome, return, length and mean stored advantage. Reads the trajectories' own columns
// and unpacks only their credit columns (turnData: the advantages), never their texts. Two
// trajectories side by side (GET /trajectories/diff): turns aligned by index, differing actions marked.
import { getRawDb, type RawDb } from "./raw";
import { getTrajectory } from "./rollouts";
import { unpackTurnColumns } from "./trajectory-pack";
import { NotFoundError } from "../schemas/errors";
import type { TaskTimeline, TaskTimelineQuery, TimelineStep, TrajectoryDiff } from "../schemas/timeline";

type Row = [number, string, string, number, number, number, number, Uint8Array];

/** Sum and count of a trajectory's stored advantages (turns without one left out). */
function advantages(turnData: Uint8Array): [number, number] {
  let sum = 0;
  let n = 0;
  for (const a of unpackTurnColumns(turnData).advantage) if (a !== null && a !== undefined) (sum += a), n++;
  return [sum, n];
}

export function taskTimeline(q: TaskTimelineQuery, db: RawDb = getRawDb()): TaskTimeline {
  const names = new Map(
    (
      db
        .prepare(`SELECT "id", "name" FROM "Run" WHERE "id" IN (${q.runs.map(() => "?").join(",")})`)
        .raw()
        .all(...q.runs) as [string, string][]
    ).map(([id, name]) => [id, name]),
  );
  for (const id of q.runs) if (!names.has(id)) throw new NotFoundError("run", id);
  const task = q.task !== undefined ? `g."uid" = ?` : `g."taskSeed" = ?${q.envId !== undefined ? ` AND g."envId" = ?` : ""}`;
  const taskArgs = q.task !== undefined ? [q.task] : q.envId !== undefined ? [q.seed, q.envId] : [q.seed];
  const stmt = db.prepare(
    `SELECT s."step", g."uid", t."id", t."index", t."success", t."reward", t."length", t."turnData"
     FROM "RolloutGroup" g JOIN "RolloutStep" s ON s."id" = g."stepId" JOIN "Trajectory" t ON t."groupId" = g."id"
     WHERE g."runId" = ? AND ${task} ORDER BY s."step", g."uid", t."index"`,
  );
  const runs = q.runs.map((runId) => {
    const rows = stmt.raw().all(runId, ...taskArgs) as Row[];
    const steps: TimelineStep[] = [];
    let sum = 0;
    let n = 0;
    const close = () => {
      const s = steps[steps.length - 1];
      if (!s) return;
      const k = s.trajectories.length;
      s.successRate = s.trajectories.filter((t) => t.success).length / k;
      s.meanReturn = s.trajectories.reduce((a, t) => a + t.reward, 0) / k;
      s.meanLength = s.trajectories.reduce((a, t) => a + t.length, 0) / k;
      s.meanAdvantage = n ? sum / n : null;
      sum = n = 0;
    };
    for (const [step, uid, id, index, success, reward, length, turnData] of rows) {
      const last = steps[steps.length - 1];
      if (!last || last.step !== Number(step) || last.uid !== uid) {
        close();
        steps.push({ step: Number(step), uid, trajectories: [], successRate: 0, meanReturn: 0, meanLength: 0, meanAdvantage: null });
      }
      const [a, c] = advantages(turnData);
      sum += a;
      n += c;
      steps[steps.length - 1].trajectories.push({
        id,
        index: Number(index),
        success: Number(success) === 1 || (success as unknown) === true,
        reward: Number(reward),
        length: Number(length),
        meanAdvantage: c ? a / c : null,
      });
    }
    close();
    return { id: runId, name: names.get(runId)!, steps };
  });
  return { runs };
}

export function trajectoryDiff(aId: string, bId: string, db: RawDb = getRawDb()): TrajectoryDiff {
  const side = (id: string) => {
    const t = getTrajectory(id, db);
    if (!t) throw new NotFoundError("trajectory", id);
    const runName = db.prepare(`SELECT "name" FROM "Run" WHERE "id" = ?`).pluck().get(t.runId) as string;
    return { t, head: { id, runId: t.runId, runName, step: t.step, uid: t.uid, index: t.index, success: t.success, reward: t.reward, length: t.length } };
  };
  const a = side(aId);
  const b = side(bId);
  const turn = (u: (typeof a.t.turns)[number] | undefined) =>
    u ? { observation: u.observation, action: u.action, reward: u.reward, advantage: u.advantage } : null;
  const turns = Array.from({ length: Math.max(a.t.turns.length, b.t.turns.length) }, (_, i) => {
    const x = a.t.turns[i];
    const y = b.t.turns[i];
    return { index: i, a: turn(x), b: turn(y), differs: !x || !y || x.action !== y.action };
  });
  return { a: a.head, b: b.head, turns, differing: turns.filter((t) => t.differs).length };
}
