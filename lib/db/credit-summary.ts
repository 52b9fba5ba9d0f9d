// Per-step credit summaries, kept in "StepCreditSummary": computed by lib/schemas/step-summary.ts
// (ingest from the step it stores, the credit views from stored or recomputed advantages), stored
// here. Steps never change, so a summary never goes stale; `SUMMARY_VERSION` changes when what a
// summary holds changes. A row of version PENDING_VERSION marks a step whose deferred work (its
// summary and its search index, lib/ingest/deferred.ts) is not done yet: written in the step's own
// transaction, replaced by the summary, found again at start after a crash (pendingSteps).
import type { StepSummary } from "../schemas/step-summary";
import { getRawDb, type RawDb } from "./raw";

export type { StepSummary };

export const SUMMARY_VERSION = 2;
/** The version of a placeholder row: the step's deferred work is still to do (never a current summary). */
export const PENDING_VERSION = 0;

// ---------------------------------------------------------------- the table

/**
 * Keeps a step's stored-advantage summary (a summary already there wins: both are the same values).
 * A pending step's marker stays (its deferred work replaces it, finishPendingStep): until then a
 * reader's summary lives in the reader's cache only.
 */
export function writeStepSummary(runId: string, stepId: string, s: StepSummary, db: RawDb = getRawDb()): void {
  // one statement on both stores: the target's column qualified (PostgreSQL finds a bare one ambiguous)
  const sql = `INSERT INTO "StepCreditSummary" ("stepId","runId","version","body") VALUES (?,?,?,?) ON CONFLICT ("stepId") DO
    UPDATE SET "version" = EXCLUDED."version", "body" = EXCLUDED."body"
    WHERE "StepCreditSummary"."version" <> EXCLUDED."version" AND "StepCreditSummary"."version" <> ${PENDING_VERSION}`;
  db.prepare(sql).run(stepId, runId, SUMMARY_VERSION, JSON.stringify(s));
}

/** Marks a step's deferred work as to do; in the step's own write transaction. */
export function markStepPending(runId: string, stepId: string, db: RawDb): void {
  db.prepare(`INSERT INTO "StepCreditSummary" ("stepId","runId","version","body") VALUES (?,?,?,'')`).run(stepId, runId, PENDING_VERSION);
}

/**
 * Ends a pending step's deferred work: its marker becomes `summary` (none: the marker goes, and the
 * summary is made on first read). False when the step was not pending (done by another process).
 */
export function finishPendingStep(stepId: string, summary: StepSummary | null, db: RawDb): boolean {
  const r = summary
    ? db
        .prepare(`UPDATE "StepCreditSummary" SET "version" = ?, "body" = ? WHERE "stepId" = ? AND "version" = ?`)
        .run(SUMMARY_VERSION, JSON.stringify(summary), stepId, PENDING_VERSION)
    : db.prepare(`DELETE FROM "StepCreditSummary" WHERE "stepId" = ? AND "version" = ?`).run(stepId, PENDING_VERSION);
  return r.changes > 0;
}

/** Whether a step's deferred work is still to do. */
export function stepPending(stepId: string, db: RawDb = getRawDb()): boolean {
  return db.prepare(`SELECT 1 FROM "StepCreditSummary" WHERE "stepId" = ? AND "version" = ?`).get(stepId, PENDING_VERSION) !== undefined;
}

/** Every step whose deferred work is still to do (after a crash: found at start), oldest first. */
export function pendingSteps(db: RawDb = getRawDb()): { stepId: string; runId: string }[] {
  return db.prepare(`SELECT "stepId", "runId" FROM "StepCreditSummary" WHERE "version" = ? ORDER BY "stepId"`).all(PENDING_VERSION) as {
    stepId: string;
    runId: string;
  }[];
}

/** The kept summaries of these steps (current version only), by step id. */
export function readStepSummaries(stepIds: readonly string[], db: RawDb = getRawDb()): Map<string, StepSummary> {
  const out = new Map<string, StepSummary>();
  for (let i = 0; i < stepIds.length; i += 500) {
    const ids = stepIds.slice(i, i + 500);
    const rows = db
      .prepare(`SELECT "stepId","body" FROM "StepCreditSummary" WHERE "version" = ? AND "stepId" IN (${ids.map(() => "?").join(",")})`)
      .raw()
      .all(SUMMARY_VERSION, ...ids) as [string, string][];
    for (const [id, body] of rows) out.set(id, JSON.parse(body) as StepSummary);
  }
  return out;
}
