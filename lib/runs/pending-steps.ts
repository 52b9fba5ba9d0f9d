// Steps whose deferred work (search index and credit summary, lib/ingest/deferred.ts) was cut off
// by the process stopping between the step's write and that work: their pending mark (lib/db/credit-summary.ts)
// is found at the server's start (scripts/web-server.mjs) and the work done from the stored rows.
// Until then nothing is wrong, only slower: a search indexes what it finds missing, and credit over
// training summarises a step it finds unsummarised.
import { evaluateRunAlerts } from "../db/alerts";
import { finishPendingStep, pendingSteps } from "../db/credit-summary";
import { runSteps } from "../db/credit";
import { getRawDb, writeTransaction, type RawDb } from "../db/raw";
import { indexMissing } from "../db/trajectory-search";
import type { StepSummary } from "../schemas/step-summary";
import { storedStepSummary } from "./credit-views";

/** Does every pending step's deferred work from its stored rows; returns how many steps were pending. */
export function finishPendingSteps(db: RawDb = getRawDb()): number {
  const pending = pendingSteps(db);
  const runs = new Map<string, string[]>();
  for (const p of pending) (runs.get(p.runId) ?? runs.set(p.runId, []).get(p.runId)!).push(p.stepId);
  for (const [runId, stepIds] of runs) {
    indexMissing([runId], db);
    const metas = new Map(runSteps(runId, db).map((m) => [m.id, m]));
    for (const stepId of stepIds) {
      const meta = metas.get(stepId);
      let summary: StepSummary | null = null;
      try {
        if (meta) summary = storedStepSummary(meta, db);
      } catch {
        /* made on first read */
      }
      writeTransaction(null, (db) => finishPendingStep(stepId, summary, db), db, { runId });
    }
    // the step rules read the summaries just kept
    try {
      evaluateRunAlerts(runId, db);
    } catch (e) {
      console.error(`pending steps: alert rules of run ${runId} could not be evaluated (${(e as Error).message})`);
    }
  }
  return pending.length;
}
