// Checkpoints of a training run and resuming from them.
import { randomUUID } from "node:crypto";
import { getRawDb, dbDateTime, writeTransaction, type Fence, type RawDb } from "./raw";
import { truncateMetricsAfter } from "./metric-writes";

export interface CheckpointRow {
  id: string;
  step: number;
  torchPath: string;
  onnxPath: string | null;
}

export function latestCheckpoint(runId: string, db: RawDb = getRawDb()): CheckpointRow | null {
  return (
    (db.prepare(`SELECT "id","step","torchPath","onnxPath" FROM "Checkpoint" WHERE "runId" = ? ORDER BY "step" DESC LIMIT 1`).get(runId) as
      | CheckpointRow
      | undefined) ?? null
  );
}

export function listCheckpoints(runId: string, db: RawDb = getRawDb()): CheckpointRow[] {
  return db.prepare(`SELECT "id","step","torchPath","onnxPath" FROM "Checkpoint" WHERE "runId" = ? ORDER BY "step"`).all(runId) as CheckpointRow[];
}

export function addCheckpoint(runId: string, step: number, torchPath: string, onnxPath: string | null, fence: Fence | null, db: RawDb = getRawDb()): void {
  writeTransaction(
    fence,
    (db) => {
      db.prepare(
        `INSERT INTO "Checkpoint" AS o ("id","runId","step","torchPath","onnxPath","createdAt") VALUES (?,?,?,?,?,?)
         ON CONFLICT("runId","step") DO UPDATE SET "torchPath" = excluded."torchPath", "onnxPath" = COALESCE(excluded."onnxPath", o."onnxPath")`,
      ).run(randomUUID(), runId, step, torchPath, onnxPath, dbDateTime());
    },
    db,
    { runId },
  );
}

/**
 * Forgets everything a run stored after `step` (-1: everything): rollouts, curves and checkpoints.
 * A resumed training job calls it with its checkpoint's step, so the steps it replays are never
 * stored twice.
 */
export function truncateRunAfter(runId: string, step: number, fence: Fence | null, db: RawDb = getRawDb()): { steps: number } {
  return writeTransaction(
    fence,
    (db) => {
      const steps = db.prepare(`DELETE FROM "RolloutStep" WHERE "runId" = ? AND "step" > ?`).run(runId, step).changes;
      db.prepare(`DELETE FROM "Checkpoint" WHERE "runId" = ? AND "step" > ?`).run(runId, step);
      truncateMetricsAfter(runId, step, db);
      return { steps };
    },
    db,
    { runId },
  );
}
