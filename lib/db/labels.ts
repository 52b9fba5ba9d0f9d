// Labels (docs/dashboard.md "Labels"): a project's label set, and labels on trajectories and turns.
// A label names its trajectory by what an import keeps of it (run, step, task uid, position in the
// group), not by the row id, so it holds when a run is re-imported; reads join back to the row.
import { orderedId } from "./ids";
import { getRawDb, dbDateTime, writeTransaction, type RawDb } from "./raw";
import { ConflictError, InvalidInputError, NotFoundError } from "../schemas/errors";
import { MAX_LABELS, type LabelOut, type LabelSteps, type TrajectoryLabelOut } from "../schemas/labels";

const iso = (v: unknown) => new Date(v as string).toISOString();

function projectId(name: string, db: RawDb): string {
  const id = db.prepare(`SELECT "id" FROM "Project" WHERE "name" = ?`).pluck().get(name) as string | undefined;
  if (id === undefined) throw new NotFoundError("project", name);
  return id;
}

export function listLabels(project: string, db: RawDb = getRawDb()): LabelOut[] {
  const rows = db
    .prepare(
      `SELECT l."id", l."name", l."position", (SELECT COUNT(*) FROM "TrajectoryLabel" u WHERE u."labelId" = l."id") AS "uses"
       FROM "Label" l WHERE l."projectId" = ? ORDER BY l."position"`,
    )
    .all(projectId(project, db)) as LabelOut[];
  return rows.map((r) => ({ ...r, position: Number(r.position), uses: Number(r.uses) }));
}

/** Adds a label to a project's set, at `position` or the first free digit. */
export function createLabel(input: { project: string; name: string; position?: number }, db: RawDb = getRawDb()): LabelOut {
  return writeTransaction(
    null,
    (db) => {
      const pid = projectId(input.project, db);
      const taken = db.prepare(`SELECT "name", "position" FROM "Label" WHERE "projectId" = ?`).raw().all(pid) as [string, number][];
      if (taken.some(([n]) => n === input.name))
        throw new ConflictError(`project ${input.project} has a label named ${input.name}`, [{ path: "body.name", message: "taken" }]);
      const used = new Set(taken.map(([, p]) => Number(p)));
      const position = input.position ?? Array.from({ length: MAX_LABELS }, (_, i) => i + 1).find((p) => !used.has(p));
      if (position === undefined)
        throw new ConflictError(`project ${input.project} has ${MAX_LABELS} labels, the most a set holds (one per digit key): delete one first`, [
          { path: "body.name", message: "label set full" },
        ]);
      if (used.has(position)) throw new ConflictError(`digit ${position} is taken in project ${input.project}`, [{ path: "body.position", message: "taken" }]);
      const id = orderedId();
      db.prepare(`INSERT INTO "Label" ("id","projectId","name","position","createdAt") VALUES (?,?,?,?,?)`).run(id, pid, input.name, position, dbDateTime());
      return { id, name: input.name, position, uses: 0 };
    },
    db,
  );
}

/** Deletes a label and every use of it. */
export function deleteLabel(id: string, db: RawDb = getRawDb()): void {
  writeTransaction(
    null,
    (db) => {
      if (db.prepare(`DELETE FROM "Label" WHERE "id" = ?`).run(id).changes === 0) throw new NotFoundError("label", id);
    },
    db,
  );
}

/** A trajectory's identity as labels hold it, and its project. */
interface Identity {
  runId: string;
  step: number;
  uid: string;
  index: number;
  length: number;
  projectId: string;
}

function identity(trajectoryId: string, db: RawDb): Identity {
  const r = db
    .prepare(
      `SELECT t."runId", s."step", g."uid", t."index", t."length", r."projectId"
       FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId" JOIN "Run" r ON r."id" = t."runId"
       WHERE t."id" = ?`,
    )
    .get(trajectoryId) as Identity | undefined;
  if (!r) throw new NotFoundError("trajectory", trajectoryId);
  return { ...r, step: Number(r.step), index: Number(r.index), length: Number(r.length) };
}

const LABEL_ROW = `u."id", u."labelId", l."name", u."turn", u."note", u."createdAt"`;
const toLabelRow = (r: Record<string, unknown>): TrajectoryLabelOut => ({
  id: r.id as string,
  labelId: r.labelId as string,
  name: r.name as string,
  turn: Number(r.turn) < 0 ? null : Number(r.turn),
  note: r.note as string,
  createdAt: iso(r.createdAt),
});

export function trajectoryLabels(trajectoryId: string, db: RawDb = getRawDb()): TrajectoryLabelOut[] {
  const t = identity(trajectoryId, db);
  return (
    db
      .prepare(
        `SELECT ${LABEL_ROW} FROM "TrajectoryLabel" u JOIN "Label" l ON l."id" = u."labelId"
         WHERE u."runId" = ? AND u."step" = ? AND u."uid" = ? AND u."index" = ? ORDER BY u."turn", l."position"`,
      )
      .all(t.runId, t.step, t.uid, t.index) as Record<string, unknown>[]
  ).map(toLabelRow);
}

/** Puts a label on a trajectory (turn null) or one of its turns; again: replaces its note. */
export function applyLabel(trajectoryId: string, input: { labelId: string; turn: number | null; note: string }, db: RawDb = getRawDb()): TrajectoryLabelOut {
  return writeTransaction(
    null,
    (db) => {
      const t = identity(trajectoryId, db);
      const label = db.prepare(`SELECT "projectId" FROM "Label" WHERE "id" = ?`).pluck().get(input.labelId) as string | undefined;
      if (label === undefined) throw new NotFoundError("label", input.labelId);
      if (label !== t.projectId)
        throw new InvalidInputError("the label belongs to another project's set", [{ path: "body.labelId", message: "not this project's" }]);
      if (input.turn !== null && input.turn >= t.length)
        throw new InvalidInputError(`turn ${input.turn} is past the trajectory's ${t.length} turns`, [
          { path: "body.turn", message: `at most ${t.length - 1}` },
        ]);
      const turn = input.turn ?? -1;
      db.prepare(
        `INSERT INTO "TrajectoryLabel" ("id","runId","step","uid","index","turn","labelId","note","createdAt") VALUES (?,?,?,?,?,?,?,?,?)
         ON CONFLICT ("runId","step","uid","index","turn","labelId") DO UPDATE SET "note" = excluded."note"`,
      ).run(orderedId(), t.runId, t.step, t.uid, t.index, turn, input.labelId, input.note, dbDateTime());
      const row = db
        .prepare(
          `SELECT ${LABEL_ROW} FROM "TrajectoryLabel" u JOIN "Label" l ON l."id" = u."labelId"
           WHERE u."runId" = ? AND u."step" = ? AND u."uid" = ? AND u."index" = ? AND u."turn" = ? AND u."labelId" = ?`,
        )
        .get(t.runId, t.step, t.uid, t.index, turn, input.labelId) as Record<string, unknown>;
      return toLabelRow(row);
    },
    db,
  );
}

/** Takes a label off a trajectory (turn undefined) or one of its turns. */
export function removeLabel(trajectoryId: string, labelId: string, turn: number | undefined, db: RawDb = getRawDb()): void {
  writeTransaction(
    null,
    (db) => {
      const t = identity(trajectoryId, db);
      const n = db
        .prepare(`DELETE FROM "TrajectoryLabel" WHERE "runId" = ? AND "step" = ? AND "uid" = ? AND "index" = ? AND "turn" = ? AND "labelId" = ?`)
        .run(t.runId, t.step, t.uid, t.index, turn ?? -1, labelId).changes;
      if (n === 0) throw new NotFoundError("label on this trajectory", labelId);
    },
    db,
  );
}

/**
 * SQL condition: the trajectory `t` (joined with its group `g` and step `s`) carries the label
 * named by the one parameter, on itself or a turn. For listTrajectories and the search.
 */
export const HAS_LABEL = `EXISTS (SELECT 1 FROM "TrajectoryLabel" u JOIN "Label" l ON l."id" = u."labelId"
  WHERE u."runId" = t."runId" AND u."step" = s."step" AND u."uid" = g."uid" AND u."index" = t."index" AND l."name" = ?)`;

/**
 * SQL: the ids of the run's trajectories (first parameter) carrying the label named by the second,
 * listed once from the labels (for `t."id" IN (...)`: a lookup a row, where HAS_LABEL is a join a row).
 */
export const LABELLED_IDS = `SELECT t2."id" FROM "TrajectoryLabel" u JOIN "Label" l ON l."id" = u."labelId"
  JOIN "RolloutStep" s2 ON s2."runId" = u."runId" AND s2."step" = u."step" JOIN "RolloutGroup" g2 ON g2."stepId" = s2."id" AND g2."uid" = u."uid"
  JOIN "Trajectory" t2 ON t2."groupId" = g2."id" AND t2."index" = u."index" WHERE u."runId" = ? AND l."name" = ?`;

/** Per step of a run, how many trajectories carry each label (on themselves or a turn). */
export function labelSteps(runId: string, db: RawDb = getRawDb()): LabelSteps {
  const labels = (
    db
      .prepare(`SELECT l."id", l."name", l."position" FROM "Label" l JOIN "Run" r ON r."projectId" = l."projectId" WHERE r."id" = ? ORDER BY l."position"`)
      .all(runId) as { id: string; name: string; position: number }[]
  ).map((l) => ({ ...l, position: Number(l.position) }));
  const points = (
    db
      .prepare(
        `SELECT "step", "labelId", COUNT(DISTINCT "uid" || ':' || CAST("index" AS TEXT)) AS "count" FROM "TrajectoryLabel" WHERE "runId" = ? GROUP BY "step", "labelId" ORDER BY "step"`,
      )
      .all(runId) as { step: number; labelId: string; count: number }[]
  ).map((p) => ({ step: Number(p.step), labelId: p.labelId, count: Number(p.count) }));
  return { labels, points };
}

/** A run's labels for the export, in step order, each with the trajectory it names now (null: not stored). */
export function runLabelRows(runId: string, label: string | undefined, db: RawDb = getRawDb()) {
  const rows = db
    .prepare(
      `SELECT u."step", u."uid", u."index", u."turn", l."name", u."note", u."createdAt",
              (SELECT t."id" FROM "RolloutStep" s JOIN "RolloutGroup" g ON g."stepId" = s."id" JOIN "Trajectory" t ON t."groupId" = g."id"
               WHERE s."runId" = u."runId" AND s."step" = u."step" AND g."uid" = u."uid" AND t."index" = u."index") AS "trajectoryId"
       FROM "TrajectoryLabel" u JOIN "Label" l ON l."id" = u."labelId"
       WHERE u."runId" = ?${label === undefined ? "" : ` AND l."name" = ?`} ORDER BY u."step", u."uid", u."index", u."turn", l."position"`,
    )
    .all(...(label === undefined ? [runId] : [runId, label])) as Record<string, unknown>[];
  return rows.map((r) => ({
    step: Number(r.step),
    task: r.uid as string,
    index: Number(r.index),
    turn: Number(r.turn) < 0 ? null : Number(r.turn),
    label: r.name as string,
    note: r.note as string,
    trajectoryId: (r.trajectoryId as string | null) ?? null,
    createdAt: iso(r.createdAt),
  }));
}
