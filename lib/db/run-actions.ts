// Statements of the run actions (lib/runs/actions.ts) that no other store file has.
import { discardStepParts } from "./ingest-batches";
import { dbDateTime, getRawDb, writeTransaction, type RawDb } from "./raw";

/**
 * Ends a running imported run: `finishedAt` is the given end, else the one stored at import, else
 * `now`; a succeeded run's progress becomes 1. The parts of steps still waiting for their last part
 * are dropped with it: a finished run takes no more parts. Whether the run was a running imported run.
 */
export function finishRunningImportedRun(
  runId: string,
  end: { status: string; error: string | null; finishedAt: Date | null; now: Date },
  db: RawDb = getRawDb(),
): boolean {
  const progress = end.status === "succeeded" ? `, "progress" = 1` : "";
  return writeTransaction(
    null,
    (db) => {
      const finished =
        db
          .prepare(
            `UPDATE "Run" SET "status" = ?, "error" = ?, "finishedAt" = COALESCE(?, "finishedAt", ?)${progress}, "updatedAt" = ?
             WHERE "id" = ? AND "kind" = 'imported' AND "status" = 'running'`,
          )
          .run(end.status, end.error, end.finishedAt && dbDateTime(end.finishedAt), dbDateTime(end.now), dbDateTime(), runId).changes === 1;
      if (finished) discardStepParts(runId, null, db);
      return finished;
    },
    db,
    { runId },
  );
}
