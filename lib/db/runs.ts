// Runs: create (with the job that produces them), list with filters/sort/pagination, get, delete.
import { randomUUID } from "node:crypto";
import { ConflictError, NotFoundError } from "../schemas/errors";
import { parseConfigFilter, type ImportRun, type RunFilters, type RunListQuery, type RunOut } from "../schemas/runs";
import type { SweepParams } from "../schemas/sweeps";
import { deleteRunMetrics } from "./metric-writes";
import { getRawDb, dbDateTime, writeTransaction, type RawDb } from "./raw";
import { dialect, likePattern } from "./dialect";

export interface NewRun {
  project: string;
  name: string;
  kind: "train" | "eval" | "imported";
  jobKind: string | null;
  config: unknown;
  envId?: string | null;
  estimator?: string | null;
  seed?: number;
  tags?: string[];
  notes?: string;
  parentRunId?: string | null;
  /** a run launched by a sweep: its id and the grid point's values (lib/runs/sweeps.ts) */
  sweepId?: string | null;
  sweepParams?: SweepParams | null;
  /** imported runs have no job and start as running */
  status?: "queued" | "running";
  /** imported runs: the source's own start (also the creation time) and end, when known */
  startedAt?: Date;
  finishedAt?: Date;
}

/** The run an external trainer's import body makes (POST /runs/import, the dashboard's import job): no job, running, the source's own times. */
export function importedRun(body: ImportRun): NewRun {
  return {
    project: body.project,
    name: body.name,
    kind: "imported",
    jobKind: null,
    config: body.config as object,
    envId: body.envId ?? null,
    estimator: body.estimator ?? null,
    seed: body.seed,
    tags: body.tags,
    notes: body.notes,
    status: "running",
    startedAt: body.startedAt ? new Date(body.startedAt) : undefined,
    finishedAt: body.finishedAt ? new Date(body.finishedAt) : undefined,
  };
}

/**
 * Creates the run (and its project when new). Inside a caller's write transaction it joins it: a
 * launched run and the queued job that produces it are written together by lib/runs/launch.ts.
 * Raw and synchronous on purpose: a Prisma interactive transaction would hold SQLite's write lock
 * across awaits, and a fenced raw write in the same process would then deadlock against it.
 */
export function createRun(input: NewRun, db: RawDb = getRawDb()): { runId: string } {
  return writeTransaction(
    null,
    (db) => {
      if (input.parentRunId && !db.prepare(`SELECT 1 FROM "Run" WHERE "id" = ?`).get(input.parentRunId))
        throw new NotFoundError("parent run", input.parentRunId);
      const now = dbDateTime();
      const projectId = ensureProject(input.project, db);
      const runId = randomUUID();
      const status = input.status ?? "queued";
      db.prepare(
        `INSERT INTO "Run" ("id","projectId","name","kind","status","jobKind","config","envId","estimator","seed","tags","notes","progressMessage","parentRunId","createdAt","updatedAt","startedAt","finishedAt","sweepId","sweepParams")
         VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
      ).run(
        runId,
        projectId,
        input.name,
        input.kind,
        status,
        input.jobKind,
        JSON.stringify(input.config),
        input.envId ?? null,
        input.estimator ?? null,
        input.seed ?? 0,
        JSON.stringify(input.tags ?? []),
        input.notes ?? "",
        status === "queued" ? "queued" : "",
        input.parentRunId ?? null,
        input.startedAt ? dbDateTime(input.startedAt) : now,
        now,
        input.startedAt ? dbDateTime(input.startedAt) : status === "running" ? now : null,
        input.finishedAt ? dbDateTime(input.finishedAt) : null,
        input.sweepId ?? null,
        input.sweepParams ? JSON.stringify(input.sweepParams) : null,
      );
      return { runId };
    },
    db,
  );
}

/** The id of project `name`, created when new (inside the caller's transaction when `db` is one). */
export function ensureProject(name: string, db: RawDb = getRawDb()): string {
  const now = dbDateTime();
  db.prepare(`INSERT INTO "Project" ("id","name","description","createdAt","updatedAt") VALUES (?,?,'',?,?) ON CONFLICT("name") DO NOTHING`).run(
    randomUUID(),
    name,
    now,
    now,
  );
  return db.prepare(`SELECT "id" FROM "Project" WHERE "name" = ?`).pluck().get(name) as string;
}

interface RunRow {
  id: string;
  projectId: string;
  project: string;
  name: string;
  kind: string;
  status: string;
  jobKind: string | null;
  config: string;
  envId: string | null;
  estimator: string | null;
  seed: number;
  tags: string;
  notes: string;
  progress: number;
  progressMessage: string;
  error: string | null;
  parentRunId: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  jobId: string | null;
  sweepId: string | null;
  sweepParams: string | null;
}

const RUN_SELECT = `SELECT r."id", r."projectId", p."name" AS "project", r."name", r."kind", r."status", r."jobKind", r."config", r."envId",
  r."estimator", r."seed", r."tags", r."notes", r."progress", r."progressMessage", r."error", r."parentRunId", r."createdAt", r."startedAt",
  r."finishedAt", r."sweepId", r."sweepParams", (SELECT j."id" FROM "Job" j WHERE j."runId" = r."id" ORDER BY j."createdAt" DESC LIMIT 1) AS "jobId"
  FROM "Run" r JOIN "Project" p ON p."id" = r."projectId"`;

/** Prisma stores DateTime on SQLite as ISO text with "+00:00"; the API speaks ISO "Z". */
function iso(s: string | null): string | null {
  return s === null ? null : new Date(s).toISOString();
}

function toRun(r: RunRow, summary: Record<string, number>): RunOut {
  return {
    ...r,
    kind: r.kind as RunOut["kind"],
    status: r.status as RunOut["status"],
    config: JSON.parse(r.config),
    tags: JSON.parse(r.tags) as string[],
    createdAt: iso(r.createdAt)!,
    startedAt: iso(r.startedAt),
    finishedAt: iso(r.finishedAt),
    sweepParams: r.sweepParams === null ? null : JSON.parse(r.sweepParams),
    summary,
  };
}

function summaries(runIds: string[], db: RawDb): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>(runIds.map((id) => [id, {}]));
  if (!runIds.length) return out;
  const rows = db.prepare(`SELECT "runId","key","lastValue" FROM "MetricSeries" WHERE "runId" IN (${runIds.map(() => "?").join(",")})`).all(...runIds) as {
    runId: string;
    key: string;
    lastValue: number;
  }[];
  for (const r of rows) out.get(r.runId)![r.key] = r.lastValue;
  return out;
}

const SORT_COLUMNS: Record<string, string> = {
  createdAt: `r."createdAt"`,
  name: `r."name"`,
  status: `r."status"`,
  envId: `r."envId"`,
  estimator: `r."estimator"`,
};

export function listRuns(q: RunListQuery, db: RawDb = getRawDb()): { runs: RunOut[]; total: number } {
  const d = dialect(db);
  const where: string[] = [];
  const args: unknown[] = [];
  // Name search is case-insensitive on both stores (SQLite's LIKE is, for ASCII).
  if (q.q) where.push(`r."name" ${d.ilike} ? ESCAPE '\\'`), args.push(likePattern(q.q));
  if (q.status) where.push(`r."status" = ?`), args.push(q.status);
  if (q.kind) where.push(`r."kind" = ?`), args.push(q.kind);
  if (q.envId) where.push(`r."envId" = ?`), args.push(q.envId);
  if (q.estimator) where.push(`r."estimator" = ?`), args.push(q.estimator);
  if (q.project) where.push(`p."name" = ?`), args.push(q.project);
  if (q.sweep) where.push(`r."sweepId" = ?`), args.push(q.sweep);
  if (q.tag) {
    where.push(d.jsonArrayHas(`r."tags"`));
    args.push(q.tag);
  }
  for (const c of q.config ? parseConfigFilter(q.config) : []) d.configClause(c, where, args);
  const w = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const filterArgs = [...args];
  const dir = q.order === "asc" ? "ASC" : "DESC";
  let order: string;
  let join = "";
  if (q.sort.startsWith("metric:")) {
    // Runs without the metric sort last in either direction.
    join = `LEFT JOIN "MetricSeries" ms ON ms."runId" = r."id" AND ms."key" = ?`;
    args.unshift(q.sort.slice("metric:".length));
    order = `ms."lastValue" IS NULL, ms."lastValue" ${dir}, r."createdAt" DESC`;
  } else order = `${SORT_COLUMNS[q.sort]} ${dir}, r."id" ${dir}`;
  // Sort and page over ids only, then read the page's full rows: the per-row job lookup and the
  // config text are then read for one page, not for every matching run (10^4 runs stay fast). The
  // page's rows carry the total (the filter is evaluated once); a page past the end counts alone.
  const page = db
    .prepare(`SELECT r."id", COUNT(*) OVER () FROM "Run" r JOIN "Project" p ON p."id" = r."projectId" ${join} ${w} ORDER BY ${order} LIMIT ? OFFSET ?`)
    .raw()
    .all(...args, q.pageSize, (q.page - 1) * q.pageSize) as [string, number][];
  const ids = page.map((r) => r[0]);
  const total = page.length
    ? page[0][1]
    : q.page === 1
      ? 0
      : (db
          .prepare(`SELECT COUNT(*) FROM "Run" r JOIN "Project" p ON p."id" = r."projectId" ${w}`)
          .pluck()
          .get(...filterArgs) as number);
  const byId = new Map(
    ids.length ? (db.prepare(`${RUN_SELECT} WHERE r."id" IN (${ids.map(() => "?").join(",")})`).all(...ids) as RunRow[]).map((r) => [r.id, r]) : [],
  );
  const rows = ids.map((id) => byId.get(id)!).filter(Boolean);
  const sums = summaries(ids, db);
  return { runs: rows.map((r) => toRun(r, sums.get(r.id)!)), total };
}

export type { RunFilters } from "../schemas/runs";

/** The values the runs-table filters offer (distinct columns, tags, metric keys, config paths). */
export function runFilters(db: RawDb = getRawDb()): RunFilters {
  const distinct = (col: string) => db.prepare(`SELECT DISTINCT "${col}" FROM "Run" WHERE "${col}" IS NOT NULL ORDER BY 1`).pluck().all() as string[];
  return {
    projects: db
      .prepare(`SELECT "name" FROM "Project" p WHERE EXISTS (SELECT 1 FROM "Run" r WHERE r."projectId" = p."id") ORDER BY 1 LIMIT 500`)
      .pluck()
      .all() as string[],
    envIds: distinct("envId"),
    estimators: distinct("estimator"),
    kinds: distinct("kind"),
    tags: db
      .prepare(dialect(db).distinctArrayValues("Run", "tags", 500))
      .pluck()
      .all() as string[],
    metricKeys: db.prepare(`SELECT "key", COUNT(*) AS "runs" FROM "MetricSeries" GROUP BY "key" ORDER BY "runs" DESC, "key" LIMIT 500`).all() as {
      key: string;
      runs: number;
    }[],
    configKeys: db.prepare(dialect(db).configKeys(200, 300)).pluck().all() as string[],
  };
}

/** Who may write into a run (lib/ingest/write-access.ts decides): its kind, status, job kind and write key's hash. */
export function runOwner(
  runId: string,
  db: RawDb = getRawDb(),
): { kind: string; status: string; jobKind: string | null; writeKeyHash: string | null } | undefined {
  return db.prepare(`SELECT "kind", "status", "jobKind", "writeKeyHash" FROM "Run" WHERE "id" = ?`).get(runId) as
    | { kind: string; status: string; jobKind: string | null; writeKeyHash: string | null }
    | undefined;
}

export function setWriteKeyHash(runId: string, hash: string, db: RawDb = getRawDb()): void {
  db.prepare(`UPDATE "Run" SET "writeKeyHash" = ? WHERE "id" = ?`).run(hash, runId);
}

/** An imported run running again (its finish and error cleared). */
export function reopenImportedRun(runId: string, db: RawDb = getRawDb()): void {
  db.prepare(`UPDATE "Run" SET "status" = 'running', "finishedAt" = NULL, "error" = NULL, "updatedAt" = ? WHERE "id" = ? AND "kind" = 'imported'`).run(
    dbDateTime(),
    runId,
  );
}

/** The run an earlier import of the same source made (config.turnlensImport.id, per project), if any. */
export function findImportedRun(db: RawDb, project: string, importId: string): { id: string; name: string } | undefined {
  return db
    .prepare(
      `SELECT r."id", r."name" FROM "Run" r JOIN "Project" p ON p."id" = r."projectId"
       WHERE p."name" = ? AND r."kind" = 'imported' AND ${dialect(db).jsonText(`r."config"`, ["turnlensImport", "id"])} = ?
       ORDER BY r."createdAt" LIMIT 1`,
    )
    .get(project, importId) as { id: string; name: string } | undefined;
}

/** An imported run's end as its import's finish record gives it (an end already stored wins). */
export function finishImportedRunRow(runId: string, status: string, ended: Date, db: RawDb = getRawDb()): void {
  db.prepare(`UPDATE "Run" SET "status" = ?, "finishedAt" = COALESCE("finishedAt", ?), "progress" = 1, "updatedAt" = ? WHERE "id" = ?`).run(
    status,
    dbDateTime(ended),
    dbDateTime(),
    runId,
  );
}

export function getRun(id: string, db: RawDb = getRawDb()): RunOut {
  const row = db.prepare(`${RUN_SELECT} WHERE r."id" = ?`).get(id) as RunRow | undefined;
  if (!row) throw new NotFoundError("run", id);
  return toRun(row, summaries([id], db).get(id)!);
}

// lib/db/raw.ts holds it, so that the metric and rollout reads (which runs.ts imports) ask the same way
export { assertRunExists } from "./raw";

/** Deletes a finished run and everything it owns (foreign keys cascade). A queued or running run must be canceled first. */
export async function deleteRun(id: string, db: RawDb = getRawDb()): Promise<void> {
  writeTransaction(
    null,
    (db) => {
      const status = db.prepare(`SELECT "status" FROM "Run" WHERE "id" = ?`).pluck().get(id) as string | undefined;
      if (status === undefined) throw new NotFoundError("run", id);
      if (status === "queued" || status === "running") throw new ConflictError(`run ${id} is ${status}: cancel it before deleting`);
      deleteRunMetrics(id, db);
      db.prepare(`DELETE FROM "Run" WHERE "id" = ?`).run(id);
    },
    db,
  );
}

export function listProjects(db: RawDb = getRawDb()): { id: string; name: string; description: string; runs: number }[] {
  return db
    .prepare(
      `SELECT p."id", p."name", p."description", (SELECT COUNT(*) FROM "Run" r WHERE r."projectId" = p."id") AS "runs" FROM "Project" p ORDER BY p."name"`,
    )
    .all() as { id: string; name: string; description: string; runs: number }[];
}
