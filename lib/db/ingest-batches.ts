// The ingest path's own tables: IngestBatch, the record of each idempotent write (its content hash
// and the answer it got, so a retry is answered from it), and IngestStepPart, the parts of a step
// sent in pieces until the last one arrives (lib/ingest/batches.ts decides; this file stores).
import { dbDateTime, type RawDb } from "./raw";

/** The record of an earlier write under this key, if any. */
export function priorBatch(runId: string, key: string, db: RawDb): { hash: string; response: string } | undefined {
  return db.prepare(`SELECT "hash", "response" FROM "IngestBatch" WHERE "runId" = ? AND "batchId" = ?`).get(runId, key) as
    | { hash: string; response: string }
    | undefined;
}

export function recordBatch(runId: string, key: string, kind: "metrics" | "steps", hash: string, response: unknown, db: RawDb): void {
  db.prepare(`INSERT INTO "IngestBatch" ("runId","batchId","kind","hash","response","createdAt") VALUES (?,?,?,?,?,CURRENT_TIMESTAMP)`).run(
    runId,
    key,
    kind,
    hash,
    JSON.stringify(response),
  );
}

/** The part count another waiting part of the step (not part `part`) declared, when it is not `parts`. */
export function otherPartCount(runId: string, step: number, part: number, parts: number, db: RawDb): number | undefined {
  return db
    .prepare(`SELECT "parts" FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ? AND "part" <> ? AND "parts" <> ? LIMIT 1`)
    .pluck()
    .get(runId, step, part, parts) as number | undefined;
}

/** Bytes (UTF-8) of JSON the step's waiting parts other than `part` hold. OCTET_LENGTH reads the stored size, not the text (LENGTH counts characters: 0.5 s over 252 MB). */
export function heldPartsBytes(runId: string, step: number, part: number, db: RawDb): number {
  return Number(
    db
      .prepare(`SELECT COALESCE(SUM(OCTET_LENGTH("body")), 0) FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ? AND "part" <> ?`)
      .pluck()
      .get(runId, step, part),
  );
}

/** Keeps a part (its content as JSON text), in place of a waiting one of the same index; returns how many parts of the step are waiting now. */
export function addStepPart(runId: string, step: number, part: number, parts: number, body: string, now: Date, db: RawDb): number {
  db.prepare(`DELETE FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ? AND "part" = ?`).run(runId, step, part);
  db.prepare(`INSERT INTO "IngestStepPart" ("runId","step","part","parts","body","createdAt") VALUES (?,?,?,?,?,?)`).run(
    runId,
    step,
    part,
    parts,
    body,
    dbDateTime(now),
  );
  return db.prepare(`SELECT COUNT(*) FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ?`).pluck().get(runId, step) as number;
}

/** The record key of a step's part (IngestBatch.batchId). */
export const stepPartKey = (step: number, part: number) => `steppart:${step}:${part}`;

export function deleteBatch(runId: string, key: string, db: RawDb): void {
  db.prepare(`DELETE FROM "IngestBatch" WHERE "runId" = ? AND "batchId" = ?`).run(runId, key);
}

/** The waiting parts' bodies, in part order. */
export function stepPartBodies<T>(runId: string, step: number, db: RawDb): T[] {
  return (db.prepare(`SELECT "body" FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ? ORDER BY "part"`).pluck().all(runId, step) as string[]).map(
    (b) => JSON.parse(b) as T,
  );
}

/** Removes the parts of a step once it is stored (their records stay: a retried part is answered from its record). */
export function deleteStepParts(runId: string, step: number, db: RawDb): void {
  db.prepare(`DELETE FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ?`).run(runId, step);
}

export interface DiscardedStep {
  step: number;
  parts: number;
}

/**
 * Drops the waiting parts of a step of the run that never completed (every step of it when `step`
 * is null) with their records, so each part can be sent afresh; returns what was dropped.
 */
export function discardStepParts(runId: string, step: number | null, db: RawDb): DiscardedStep[] {
  const rows = db
    .prepare(`SELECT "step", "part" FROM "IngestStepPart" WHERE "runId" = ?${step === null ? "" : ` AND "step" = ?`} ORDER BY "step", "part"`)
    .all(...(step === null ? [runId] : [runId, step])) as { step: number; part: number }[];
  const out: DiscardedStep[] = [];
  for (const r of rows) {
    if (out.at(-1)?.step === r.step) out[out.length - 1].parts++;
    else out.push({ step: r.step, parts: 1 });
    deleteBatch(runId, stepPartKey(r.step, r.part), db);
  }
  for (const d of out) deleteStepParts(runId, d.step, db);
  return out;
}

/** Steps of any run whose newest waiting part arrived before `cutoff`. */
export function stalePartSteps(cutoff: Date, db: RawDb): { runId: string; step: number }[] {
  return db.prepare(`SELECT "runId", "step" FROM "IngestStepPart" GROUP BY "runId", "step" HAVING MAX("createdAt") < ?`).all(dbDateTime(cutoff)) as {
    runId: string;
    step: number;
  }[];
}
