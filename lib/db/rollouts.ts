// Rollout storage: step -> group -> trajectory, a trajectory's turns packed into its row
// (lib/db/trajectory-pack.ts). Written in bulk (one IMMEDIATE transaction per step, fenced by the
// job's lease), read in pages by cursor. What a reader does not need at once (the step's search
// index and credit summary, computed by the caller) goes in with the step, or after it: then the
// step carries a pending mark (lib/db/credit-summary.ts) until completeStoredStep.
import { createHash } from "node:crypto";
import { orderedId } from "./ids";
import { ConflictError } from "../schemas/errors";
import type { GroupOut, RolloutStepInput, RolloutStepOut, TrajectoryOut, TurnOut } from "../schemas/rollouts";
import { assertRunExists, getRawDb, dbDateTime, insertRows, writeTransaction, type Fence, type RawDb } from "./raw";
import { dialect } from "./dialect";
import { hashGroupPlan, packGroup, packGroupWith, planGroup, unpackTurns, type GroupPlan, type PackedGroup, type StreamCompressor } from "./trajectory-pack";
import { readTrajectoryTexts, readTurnTexts } from "./trajectory-texts";
import { finishPendingStep, markStepPending, type StepSummary } from "./credit-summary";
import { indexTrajectories, type IndexEntry } from "./trajectory-search";
import { LABELLED_IDS } from "./labels";

export class StepExistsError extends ConflictError {
  constructor(runId: string, step: number) {
    super(`step ${step} of run ${runId} is already stored; a step is written once`);
  }
}

export function stepExists(runId: string, step: number, db: RawDb = getRawDb()): boolean {
  return db.prepare(`SELECT 1 FROM "RolloutStep" WHERE "runId" = ? AND "step" = ?`).get(runId, step) !== undefined;
}

/** Trajectory's columns as writeRolloutStep inserts them (rolloutRows builds the rows in this order). */
export const TRAJECTORY_COLS = [
  "id",
  "runId",
  "groupId",
  "index",
  "reward",
  "success",
  "length",
  "truncated",
  "firstSeq",
  "turnData",
  "turnTexts",
  "turnTokens",
];
export const STEP_COLS = ["id", "runId", "step", "estimator", "params", "diagnostics", "createdAt"];
export const GROUP_COLS = ["id", "runId", "stepId", "uid", "envId", "taskSeed"];

/** A step's ids and its trajectories' packed columns (packStep). */
export interface PackedStep {
  stepId: string;
  groupIds: string[];
  groups: PackedGroup[];
  /** each group's trajectory ids, in order */
  ids: string[][];
  /**
   * SHA-256 of the step's content as stored (its fields, then each group's columns before
   * compression, lib/db/trajectory-pack.ts hashGroupPlan): ingest's idempotency hash, made from
   * the JSON the packer writes anyway instead of the step's JSON again.
   */
  hash: string;
}

/** A step's ids and each group's plan handed to `pack` in turn (an asynchronous pack starts on a group while the next is planned), with its content hash. */
function packGroupsWith<G>(input: RolloutStepInput, newId: () => string, pack: (plan: GroupPlan) => G) {
  const stepId = newId();
  const groupIds: string[] = [];
  const ids: string[][] = [];
  const hash = createHash("sha256").update(
    JSON.stringify([input.step, input.estimator ?? null, input.params ?? null, input.diagnostics ?? null, input.groups.length]),
  );
  const groups = input.groups.map((g) => {
    groupIds.push(newId());
    const trajectoryIds = g.trajectories.map(() => newId());
    ids.push(trajectoryIds);
    const plan = planGroup(
      g.trajectories.map((t) => t.turns),
      trajectoryIds,
    );
    hash.update(JSON.stringify([g.uid, g.envId, g.taskSeed, g.trajectories.map((t) => [t.reward ?? null, t.success, t.truncated, t.turns.length])]));
    hashGroupPlan(hash, plan);
    return pack(plan);
  });
  return { stepId, groupIds, groups, ids, hash: hash.digest("hex") };
}

/** Packs a step's trajectories, with new ids, and makes its content hash from the planned columns. */
export function packStep(input: RolloutStepInput, newId: () => string = orderedId): PackedStep {
  return packGroupsWith(input, newId, packGroup);
}

/** The same bytes, its texts compressed by `compress` (another thread) while this one plans, hashes and deflates. */
export async function packStepWith(input: RolloutStepInput, compress: StreamCompressor, newId: () => string = orderedId): Promise<PackedStep> {
  const step = packGroupsWith(input, newId, (plan) => packGroupWith(plan, compress));
  return { ...step, groups: await Promise.all(step.groups) };
}

/**
 * The RolloutStep, RolloutGroup and Trajectory rows of one step, in the column orders above: the
 * run's turns numbered on from `seq0`, each trajectory's turns packed (lib/db/trajectory-pack.ts),
 * ids from `newId` unless `packed` (packStep) brings them. writeRolloutStep stores them; gen:scale
 * bulk-loads them.
 */
export function rolloutRows(
  runId: string,
  input: RolloutStepInput,
  seq0: number,
  createdAt: string,
  newId: () => string,
  packed: PackedStep = packStep(input, newId),
) {
  const { stepId } = packed;
  const step = [
    stepId,
    runId,
    input.step,
    input.estimator ?? null,
    input.params ? JSON.stringify(input.params) : null,
    input.diagnostics ? JSON.stringify(input.diagnostics) : null,
    createdAt,
  ];
  const groups: unknown[][] = [];
  const trajectories: unknown[][] = [];
  let seq = seq0;
  input.groups.forEach((g, gi) => {
    const groupId = packed.groupIds[gi];
    groups.push([groupId, runId, stepId, g.uid, g.envId, g.taskSeed]);
    const p = packed.groups[gi];
    g.trajectories.forEach((t, ti) => {
      const reward = t.reward ?? t.turns.reduce((s, u) => s + u.reward, 0);
      trajectories.push([
        packed.ids[gi][ti],
        runId,
        groupId,
        ti,
        reward,
        t.success ? 1 : 0,
        t.turns.length,
        t.truncated ? 1 : 0,
        seq,
        p.turnData[ti],
        p.turnTexts[ti],
        p.turnTokens[ti],
      ]);
      seq += t.turns.length;
    });
  });
  return { stepId, steps: [step], groups, trajectories, turns: seq - seq0 };
}

/** The run-wide index its next turn gets: one past the last trajectory's turns (index range scan). */
function nextTurnSeq(runId: string, db: RawDb): number {
  return (
    (db.prepare(`SELECT "firstSeq" + "length" FROM "Trajectory" WHERE "runId" = ? ORDER BY "firstSeq" DESC LIMIT 1`).pluck().get(runId) as
      | number
      | undefined) ?? 0
  );
}

/**
 * What a stored step has beside its rows: its credit summary (computed by the caller,
 * lib/schemas/step-summary.ts summarizeStepInput; null: made on first read). "deferred": neither
 * its summary nor its search index now; the step is marked pending and the caller completes it
 * after answering (lib/ingest/deferred.ts), or the next start does (lib/runs/pending-steps.ts).
 */
export type StepExtras = { summary: StepSummary | null } | "deferred";

/**
 * Writes one step's rollouts, readable when the transaction commits, with its search index and
 * summary or (`extras` "deferred") its pending mark; `packed`: its columns packed already
 * (packStep). Throws StepExistsError if the step is already stored (nothing written twice).
 */
export function writeRolloutStep(
  runId: string,
  input: RolloutStepInput,
  fence: Fence | null = null,
  db: RawDb = getRawDb(),
  extras: StepExtras = { summary: null },
  packed?: PackedStep,
): { stepId: string; turns: number } {
  return writeTransaction(
    fence,
    (db) => {
      if (stepExists(runId, input.step, db)) throw new StepExistsError(runId, input.step);
      const rows = rolloutRows(runId, input, nextTurnSeq(runId, db), dbDateTime(), orderedId, packed);
      const cols = (c: string[]) => c.map((x) => `"${x}"`).join(",");
      insertRows(db, `INSERT INTO "RolloutStep" (${cols(STEP_COLS)})`, STEP_COLS.length, rows.steps.flat());
      insertRows(db, `INSERT INTO "RolloutGroup" (${cols(GROUP_COLS)})`, GROUP_COLS.length, rows.groups.flat());
      // a trajectory row carries its turns' packed texts (~2-100 KB): 64 rows a statement keeps a
      // statement's parameters to a few MB, in two round trips for a 128-trajectory step on PostgreSQL
      insertRows(db, `INSERT INTO "Trajectory" (${cols(TRAJECTORY_COLS)})`, TRAJECTORY_COLS.length, rows.trajectories.flat(), "", 64);
      markStepPending(runId, rows.stepId, db);
      if (extras !== "deferred") completeStoredStep(runId, rows.stepId, input, extras.summary, db);
      return { stepId: rows.stepId, turns: rows.turns };
    },
    db,
    { runId },
  );
}

/**
 * A pending step's deferred work, inside the caller's write transaction: its search index from
 * `input` (the step as written) and its summary in place of its pending mark.
 */
export function completeStoredStep(runId: string, stepId: string, input: RolloutStepInput, summary: StepSummary | null, db: RawDb): void {
  indexStoredStep(runId, stepId, input, db);
  finishPendingStep(stepId, summary, db);
}

/**
 * Adds a stored step's trajectories to the search index, from the texts they were stored with
 * (`input`, the step as written); trajectories already indexed (a search indexes what it finds
 * missing) are skipped. Inside the caller's write transaction.
 */
export function indexStoredStep(runId: string, stepId: string, input: RolloutStepInput, db: RawDb): void {
  const rows = db
    .prepare(
      `SELECT g."uid", t."index", t."id", t."reward" FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id"
       WHERE g."stepId" = ? AND NOT EXISTS (SELECT 1 FROM "TrajectorySearch" x WHERE x."trajectoryId" = t."id")`,
    )
    .raw()
    .all(stepId) as [string, number, string, number][];
  if (!rows.length) return;
  const byGroup = new Map(input.groups.map((g) => [g.uid, g.trajectories]));
  const at = new Map(input.groups.map((g, i) => [g.uid, i]));
  // in the step's own order (index keys break ties in a search's sort)
  rows.sort((a, b) => at.get(a[0])! - at.get(b[0])! || a[1] - b[1]);
  const entries: IndexEntry[] = [];
  for (const [uid, index, id, reward] of rows) {
    const t = byGroup.get(uid)?.[index];
    if (!t) continue;
    entries.push({
      id,
      runId,
      step: input.step,
      success: t.success,
      reward,
      length: t.turns.length,
      observations: t.turns.map((u) => u.observation),
      actions: t.turns.map((u) => u.action),
      advantages: t.turns.map((u) => u.advantage),
    });
  }
  indexTrajectories(db, entries);
}

/** A run's stored trajectories counted: how many, successes, summed return and turns (a resumed evaluation continues from them). */
export function runTrajectoryTotals(runId: string, db: RawDb = getRawDb()): { trajectories: number; successes: number; reward: number; turns: number } {
  const r = db
    .prepare(
      `SELECT COUNT(*) AS n, COALESCE(SUM(CAST("success" AS INTEGER)),0) AS s, COALESCE(SUM("reward"),0) AS r, COALESCE(SUM("length"),0) AS l FROM "Trajectory" WHERE "runId" = ?`,
    )
    .get(runId) as { n: number; s: number; r: number; l: number };
  return { trajectories: Number(r.n), successes: Number(r.s), reward: Number(r.r), turns: Number(r.l) };
}

/** Per stored task group of a run: its uid, trajectories, successes and summed return. */
export function runGroupTotals(runId: string, db: RawDb = getRawDb()): { uid: string; trajectories: number; successes: number; reward: number }[] {
  return (
    db
      .prepare(
        `SELECT g."uid" AS uid, COUNT(*) AS n, COALESCE(SUM(CAST(t."success" AS INTEGER)),0) AS c, COALESCE(SUM(t."reward"),0) AS reward
         FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" WHERE t."runId" = ? GROUP BY g."id", g."uid"`,
      )
      .all(runId) as { uid: string; n: number; c: number; reward: number }[]
  ).map((x) => ({ uid: x.uid, trajectories: Number(x.n), successes: Number(x.c), reward: Number(x.reward) }));
}

/** Row types are the API's response schemas (lib/schemas/rollouts.ts): one definition of each shape. */
export type StepRow = RolloutStepOut;

export function listSteps(runId: string, page = 1, pageSize = 100, db: RawDb = getRawDb()): { steps: StepRow[]; total: number } {
  const total = db.prepare(`SELECT COUNT(*) FROM "RolloutStep" WHERE "runId" = ?`).pluck().get(runId) as number;
  const steps = db
    .prepare(
      `SELECT s."id", s."step", s."estimator", s."createdAt",
              (SELECT COUNT(*) FROM "RolloutGroup" g WHERE g."stepId" = s."id") AS "groups",
              COUNT(t."id") AS "trajectories", AVG(CAST(t."success" AS INTEGER)) AS "successRate", AVG(t."reward") AS "meanReward"
       FROM "RolloutStep" s
       LEFT JOIN "RolloutGroup" g ON g."stepId" = s."id"
       LEFT JOIN "Trajectory" t ON t."groupId" = g."id"
       WHERE s."runId" = ?
       GROUP BY s."id" ORDER BY s."step" DESC LIMIT ? OFFSET ?`,
    )
    .all(runId, pageSize, (page - 1) * pageSize) as StepRow[];
  return { steps, total };
}

export type GroupRow = GroupOut;

export function listGroups(runId: string, step: number, db: RawDb = getRawDb()): GroupRow[] {
  const rows = db
    .prepare(
      `SELECT g."id", g."uid", g."envId", g."taskSeed", s."step",
              COUNT(t."id") AS "trajectories", AVG(CAST(t."success" AS INTEGER)) AS "successRate", AVG(t."reward") AS "meanReward"
       FROM "RolloutStep" s JOIN "RolloutGroup" g ON g."stepId" = s."id" LEFT JOIN "Trajectory" t ON t."groupId" = g."id"
       WHERE s."runId" = ? AND s."step" = ?
       GROUP BY g."id", s."step"`,
    )
    .all(runId, step) as GroupRow[];
  // Natural order: s5-g2 before s5-g10.
  return rows.sort((a, b) => a.uid.localeCompare(b.uid, "en", { numeric: true }));
}

export type TrajectoryRow = Omit<TrajectoryOut, "turns">;

function toTrajectory(r: Record<string, unknown>): TrajectoryRow {
  return { ...(r as unknown as TrajectoryRow), success: r.success === 1, truncated: r.truncated === 1 };
}

export interface TrajectoryFilter {
  step?: number;
  groupId?: string;
  success?: boolean;
  /** a label's name: trajectories carrying it (lib/db/labels.ts) */
  label?: string;
  page?: number;
  pageSize?: number;
}

export function listTrajectories(runId: string, f: TrajectoryFilter = {}, db: RawDb = getRawDb()): { trajectories: TrajectoryRow[]; total: number } {
  const where = [`s."runId" = ?`];
  const args: unknown[] = [runId];
  if (f.step !== undefined) where.push(`s."step" = ?`), args.push(f.step);
  if (f.groupId) where.push(`t."groupId" = ?`), args.push(f.groupId);
  if (f.success !== undefined) where.push(`t."success" = ?`), args.push(f.success ? 1 : 0);
  if (f.label !== undefined) where.push(`t."id" IN (${LABELLED_IDS})`), args.push(runId, f.label);
  const pageSize = f.pageSize ?? 50;
  const offset = ((f.page ?? 1) - 1) * pageSize;
  const w = where.join(" AND ");
  // Without a step, the count needs only the trajectories' runId index (every trajectory has its group and step).
  const total = (
    f.step === undefined && f.label === undefined
      ? db.prepare(`SELECT COUNT(*) FROM "Trajectory" t WHERE ${['t."runId" = ?', ...where.slice(1)].join(" AND ")}`)
      : db.prepare(`SELECT COUNT(*) FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId" WHERE ${w}`)
  )
    .pluck()
    .get(...args) as number;
  // CROSS JOIN fixes the loop order: steps newest first by their (runId, step) index, a step's groups
  // by (stepId, uid), a group's trajectories by (groupId, index). That is the page's order, so SQLite
  // stops after the page instead of sorting every trajectory of the run (15 ms at 12,400 trajectories).
  // PostgreSQL has no CROSS JOIN ... ON and plans the joins itself.
  const join = dialect(db).orderedJoin;
  const rows = db
    .prepare(
      `SELECT t."id", t."groupId", g."uid", s."step", t."index", t."reward", t."success", t."length", t."truncated"
       FROM "RolloutStep" s ${join} "RolloutGroup" g ON g."stepId" = s."id" ${join} "Trajectory" t ON t."groupId" = g."id"
       WHERE ${w} ORDER BY s."step" DESC, g."uid", t."index" LIMIT ? OFFSET ?`,
    )
    .all(...args, pageSize, offset) as Record<string, unknown>[];
  return { trajectories: rows.map(toTrajectory), total };
}

export type TurnRow = TurnOut;

/** A trajectory row's columns unpackTurns reads, in its argument order. */
const TURN_SOURCE = `"id","firstSeq","length","turnData","turnTexts","turnTokens"`;
type TurnSource = Parameters<typeof unpackTurns>;

export function getTrajectory(id: string, db: RawDb = getRawDb()): (TrajectoryRow & { runId: string; turns: TurnRow[] }) | null {
  // the trajectory and its packed turns in one read of its row
  const row = db
    .prepare(
      `SELECT t."runId", t."id", t."groupId", g."uid", s."step", t."index", t."reward", t."success", t."length", t."truncated",
              t."firstSeq", t."turnData", t."turnTexts", t."turnTokens"
       FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId" WHERE t."id" = ?`,
    )
    .get(id) as Record<string, unknown> | undefined;
  if (!row) return null;
  const { runId, firstSeq, turnData, turnTexts, turnTokens, ...traj } = row;
  const texts = readTrajectoryTexts(id, turnTexts as Uint8Array, db);
  const turns = unpackTurns(id, firstSeq as number, traj.length as number, turnData as Uint8Array, texts, turnTokens as Uint8Array | null);
  return { ...toTrajectory(traj), runId: runId as string, turns };
}

/**
 * One page of all turns of a run, in write order, after the turn numbered `after` (index range scan
 * over its trajectories); NotFoundError when the run does not exist, asked only when the page is
 * empty (a page with turns proves it: on PostgreSQL each statement is a round trip).
 */
export function turnsPage(runId: string, after: number, limit: number, db: RawDb = getRawDb()): { turns: TurnRow[]; next: number | null } {
  // The trajectories from the one holding turn `after + 1` on: their sizes first (no packed
  // columns read), then the packed columns of only those the page needs.
  const spans = db
    .prepare(
      `SELECT "id", "firstSeq", "length" FROM "Trajectory" WHERE "runId" = ? AND "firstSeq" >=
         COALESCE((SELECT MAX("firstSeq") FROM "Trajectory" WHERE "runId" = ? AND "firstSeq" <= ?), 0)
       ORDER BY "firstSeq" LIMIT ?`,
    )
    .raw()
    .all(runId, runId, after + 1, limit + 1) as [string, number, number][];
  const ids: string[] = [];
  let covered = 0;
  for (const [id, firstSeq, length] of spans) {
    if (firstSeq + length - 1 <= after) continue;
    ids.push(id);
    covered += firstSeq + length - Math.max(firstSeq, after + 1);
    if (covered >= limit) break;
  }
  const turns: TurnRow[] = [];
  if (ids.length === 0) {
    assertRunExists(runId, db);
    return { turns, next: null };
  }
  const rows = db
    .prepare(`SELECT ${TURN_SOURCE} FROM "Trajectory" WHERE "id" IN (${ids.map(() => "?").join(",")}) ORDER BY "firstSeq"`)
    .raw()
    .all(...ids) as TurnSource[];
  const texts = readTurnTexts(
    rows.map((r) => ({ id: r[0], turnTexts: r[4] as Uint8Array })),
    db,
  );
  rows.forEach((r, i) => {
    for (const u of unpackTurns(r[0], r[1], r[2], r[3], texts[i], r[5])) if (u.seq > after && turns.length < limit) turns.push(u);
  });
  return { turns, next: turns.length === limit ? turns[turns.length - 1].seq : null };
}
