// One task across training (GET /tasks/timeline): per step of each run, the task's group with each
// trajectory's outcome, return, length and mean stored advantage. The task is a group uid, a task
// seed, or a prompt: the trajectories whose first observation hashes to the prompt's hash in the
// search index (lib/db/trajectory-search.ts promptHash), so a group there holds only those of its
// trajectories. Reads the trajectories' own columns
// and the search index's advantage sums (written with the step); only a trajectory indexed before
// those columns has its credit column (turnData) inflated, never its texts. Two trajectories side by
// side (GET /trajectories/diff): turns aligned by index, differing actions marked.
import { getRawDb, type RawDb } from "./raw";
import { getTrajectory } from "./rollouts";
import { unpackTurnColumns } from "./trajectory-pack";
import { advantageTotals, backfillPromptHashes, promptHash } from "./trajectory-search";
import { NotFoundError } from "../schemas/errors";
import type { TaskTimeline, TaskTimelineQuery, TimelineStep, TrajectoryDiff } from "../schemas/timeline";

type Row = [number, string, string, number, number, number, number, number | null, number | null];

/** Sum and count of the stored advantages of trajectories whose index row lacks them, by id. */
function unpackedTotals(ids: string[], db: RawDb): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = db
      .prepare(`SELECT "id", "turnData" FROM "Trajectory" WHERE "id" IN (${chunk.map(() => "?").join(",")})`)
      .raw()
      .all(...chunk) as [string, Uint8Array][];
    for (const [id, data] of rows) out.set(id, advantageTotals(unpackTurnColumns(data).advantage));
  }
  return out;
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
  const env = q.envId !== undefined ? ` AND g."envId" = ?` : "";
  const [task, taskArgs] =
    q.task !== undefined
      ? [`g."uid" = ?`, [q.task]]
      : q.prompt !== undefined
        ? [`ts."promptHash" = ?${env}`, [promptHash(q.prompt), ...(q.envId !== undefined ? [q.envId] : [])]]
        : [`g."taskSeed" = ?${env}`, q.envId !== undefined ? [q.seed, q.envId] : [q.seed]];
  // by prompt: every trajectory of the runs indexed with its prompt's hash, then one index lookup per run
  if (q.prompt !== undefined) backfillPromptHashes(q.runs, db);
  const stmt = db.prepare(
    `SELECT s."step", g."uid", t."id", t."index", t."success", t."reward", t."length", ts."advantageSum", ts."advantageCount"
     FROM "RolloutGroup" g JOIN "RolloutStep" s ON s."id" = g."stepId" JOIN "Trajectory" t ON t."groupId" = g."id"
     LEFT JOIN "TrajectorySearch" ts ON ts."trajectoryId" = t."id"
     WHERE g."runId" = ? AND ${task} ${q.prompt !== undefined ? `AND ts."runId" = g."runId"` : ""} ORDER BY s."step", g."uid", t."index"`,
  );
  const runs = q.runs.map((runId) => {
    const rows = stmt.raw().all(runId, ...taskArgs) as Row[];
    const missing = unpackedTotals(
      rows.filter((r) => r[8] === null).map((r) => r[2]),
      db,
    );
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
    for (const [step, uid, id, index, success, reward, length, advSum, advCount] of rows) {
      const last = steps[steps.length - 1];
      if (!last || last.step !== Number(step) || last.uid !== uid) {
        close();
        steps.push({ step: Number(step), uid, trajectories: [], successRate: 0, meanReturn: 0, meanLength: 0, meanAdvantage: null });
      }
      const [a, c] = advCount === null ? (missing.get(id) ?? [0, 0]) : [Number(advSum ?? 0), Number(advCount)];
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
