// Sweeps: the row that groups a grid's runs (each run points at it by Run.sweepId), read with its runs' progress.
import { randomUUID } from "node:crypto";
import { NotFoundError } from "../schemas/errors";
import type { SweepOut } from "../schemas/sweeps";
import { ensureProject } from "./runs";
import { dbDateTime, getRawDb, type RawDb } from "./raw";

export interface NewSweep {
  project: string;
  name: string;
  jobKind: string;
  spec: SweepOut["spec"];
}

/** Writes the sweep row (its project created when new); call inside the transaction that creates its runs. */
export function insertSweep(input: NewSweep, db: RawDb): string {
  const id = randomUUID();
  const projectId = ensureProject(input.project, db);
  db.prepare(`INSERT INTO "Sweep" ("id","projectId","name","jobKind","spec","createdAt") VALUES (?,?,?,?,?,?)`).run(
    id,
    projectId,
    input.name,
    input.jobKind,
    JSON.stringify(input.spec),
    dbDateTime(),
  );
  return id;
}

interface SweepRow {
  id: string;
  project: string;
  name: string;
  jobKind: string;
  spec: string;
  createdAt: string;
}

const SWEEP_SELECT = `SELECT s."id", p."name" AS "project", s."name", s."jobKind", s."spec", s."createdAt" FROM "Sweep" s JOIN "Project" p ON p."id" = s."projectId"`;

/** The sweeps' runs in launch order (the index each run's sweepParams holds) and their status counts. */
function withRuns(rows: SweepRow[], db: RawDb): SweepOut[] {
  if (!rows.length) return [];
  const runs = db
    .prepare(`SELECT "id", "sweepId", "status", "sweepParams" FROM "Run" WHERE "sweepId" IN (${rows.map(() => "?").join(",")})`)
    .all(...rows.map((r) => r.id)) as { id: string; sweepId: string; status: string; sweepParams: string }[];
  const index = new Map(runs.map((x) => [x.id, (JSON.parse(x.sweepParams) as { index: number }).index]));
  runs.sort((a, b) => index.get(a.id)! - index.get(b.id)!);
  return rows.map((r) => {
    const mine = runs.filter((x) => x.sweepId === r.id);
    const status: Record<string, number> = {};
    for (const x of mine) status[x.status] = (status[x.status] ?? 0) + 1;
    return {
      id: r.id,
      project: r.project,
      name: r.name,
      jobKind: r.jobKind,
      spec: JSON.parse(r.spec),
      createdAt: new Date(r.createdAt).toISOString(),
      runIds: mine.map((x) => x.id),
      status,
    };
  });
}

export function getSweep(id: string, db: RawDb = getRawDb()): SweepOut {
  const row = db.prepare(`${SWEEP_SELECT} WHERE s."id" = ?`).get(id) as SweepRow | undefined;
  if (!row) throw new NotFoundError("sweep", id);
  return withRuns([row], db)[0];
}

/** The newest sweeps, of one project or all. */
export function listSweeps(q: { project?: string; limit: number }, db: RawDb = getRawDb()): SweepOut[] {
  const rows = (
    q.project
      ? db.prepare(`${SWEEP_SELECT} WHERE p."name" = ? ORDER BY s."createdAt" DESC, s."id" LIMIT ?`).all(q.project, q.limit)
      : db.prepare(`${SWEEP_SELECT} ORDER BY s."createdAt" DESC, s."id" LIMIT ?`).all(q.limit)
  ) as SweepRow[];
  return withRuns(rows, db);
}
