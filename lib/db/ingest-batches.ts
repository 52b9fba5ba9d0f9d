// The ingest path's own tables: IngestBatch, the record of each idempotent write (its content hash
// and the answer it got, so a retry is answered from it), and IngestStepPart, the parts of a step
// sent in pieces until the last one arrives (lib/ingest/batches.ts decides; this file stores).
import type { RawDb } from "./raw";

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

/** The part count another waiting part of the step declared, when it is not `parts`. */
export function otherPartCount(runId: string, step: number, parts: number, db: RawDb): number | undefined {
  return db.prepare(`SELECT "parts" FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ? AND "parts" <> ? LIMIT 1`).pluck().get(runId, step, parts) as
    | number
    | undefined;
}

/** Keeps a part; returns how many parts of the step are waiting now. */
export function addStepPart(runId: string, step: number, part: number, parts: number, body: unknown, db: RawDb): number {
  db.prepare(`INSERT INTO "IngestStepPart" ("runId","step","part","parts","body","createdAt") VALUES (?,?,?,?,?,CURRENT_TIMESTAMP)`).run(
    runId,
    step,
    part,
    parts,
    JSON.stringify(body),
  );
  return db.prepare(`SELECT COUNT(*) FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ?`).pluck().get(runId, step) as number;
}

/** The waiting parts' bodies, in part order. */
export function stepPartBodies<T>(runId: string, step: number, db: RawDb): T[] {
  return (db.prepare(`SELECT "body" FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ? ORDER BY "part"`).pluck().all(runId, step) as string[]).map(
    (b) => JSON.parse(b) as T,
  );
}

export function deleteStepParts(runId: string, step: number, db: RawDb): void {
  db.prepare(`DELETE FROM "IngestStepPart" WHERE "runId" = ? AND "step" = ?`).run(runId, step);
}
