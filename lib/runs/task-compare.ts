// Two runs (or two evaluations) on the same tasks: which tasks the later one newly solves, newly
// fails, or still fails. A task is solved in a run when any of its trajectories succeeded (pass@k
// over every step the run played it).
import { getRun } from "../db/runs";
import { taskOutcomes, type TaskRow } from "../db/task-outcomes";
import { getRawDb, type RawDb } from "../db/raw";
import type { TaskCompare, TaskOutcome } from "../schemas/task-compare";

type Side = NonNullable<TaskOutcome["a"]>;

/**
 * Tasks are matched by environment and task seed (the instance: held-out evaluations and the
 * built-in trainer set it), unless a run's groups all share one seed while naming several tasks
 * (a trainer that sent no seeds): then by group uid.
 */
function matchBy(a: TaskRow[], b: TaskRow[]): "taskSeed" | "uid" {
  const seedless = (rows: TaskRow[]) => new Set(rows.map((r) => `${r.envId}:${r.taskSeed}`)).size === 1 && new Set(rows.map((r) => r.uid)).size > 1;
  return seedless(a) || seedless(b) ? "uid" : "taskSeed";
}

function byTask(rows: TaskRow[], by: "taskSeed" | "uid"): Map<string, { row: TaskRow; side: Side }> {
  const out = new Map<string, { row: TaskRow; side: Side; win: string | null; first: string }>();
  for (const r of rows) {
    const key = by === "taskSeed" ? `${r.envId}:${r.taskSeed}` : r.uid;
    const e = out.get(key);
    const win = r.successes > 0 ? r.trajectoryId : null;
    if (!e) out.set(key, { row: r, side: { trajectories: r.trajectories, successes: r.successes, trajectoryId: r.trajectoryId }, win, first: r.trajectoryId });
    else {
      e.side.trajectories += r.trajectories;
      e.side.successes += r.successes;
      if (win && (!e.win || win < e.win)) e.win = win;
      if (r.trajectoryId < e.first) e.first = r.trajectoryId;
      e.side.trajectoryId = e.win ?? e.first;
    }
  }
  return out;
}

export function compareTasks(aId: string, bId: string, db: RawDb = getRawDb()): TaskCompare {
  const [ra, rb] = [getRun(aId, db), getRun(bId, db)];
  const [ta, tb] = [taskOutcomes(aId, db), taskOutcomes(bId, db)];
  const by = matchBy(ta, tb);
  const [ma, mb] = [byTask(ta, by), byTask(tb, by)];
  const out: TaskCompare = {
    a: { id: ra.id, name: ra.name },
    b: { id: rb.id, name: rb.name },
    matchedBy: by,
    newlySolved: [],
    newlyFailed: [],
    persistentFailures: [],
    stillSolved: [],
    onlyA: [...ma.keys()].filter((k) => !mb.has(k)).length,
    onlyB: [...mb.keys()].filter((k) => !ma.has(k)).length,
  };
  const keys = [...ma.keys()].filter((k) => mb.has(k)).sort((x, y) => x.localeCompare(y, "en", { numeric: true }));
  for (const key of keys) {
    const a = ma.get(key)!;
    const b = mb.get(key)!;
    const t: TaskOutcome = { key, envId: a.row.envId, taskSeed: a.row.taskSeed, uid: a.row.uid, a: a.side, b: b.side };
    const [sa, sb] = [a.side.successes > 0, b.side.successes > 0];
    (sa ? (sb ? out.stillSolved : out.newlyFailed) : sb ? out.newlySolved : out.persistentFailures).push(t);
  }
  return out;
}
