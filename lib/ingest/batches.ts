// Idempotent ingest writes. A client that lost a response retries; the retry must be stored once.
// Each write is recorded in IngestBatch with a hash of its content, in the same transaction as the
// write itself: a repeat with the same content gets the stored answer (200), a repeat with other
// content a 409 naming what clashes. Steps are keyed by their step number (a step is written once),
// metric batches by the client's batchId.
import { createHash } from "node:crypto";
import { metricBodyByKey, writeMetricsByKey } from "../db/metrics";
import { writeRolloutStep } from "../db/rollouts";
import { getRawDb, writeTransaction, type RawDb } from "../db/raw";
import type { LogMetrics } from "../schemas/metrics";
import type { RolloutStepInput, RolloutStepsBatch } from "../schemas/rollouts";
import { ConflictError } from "../schemas/errors";

export interface IngestAnswer {
  status: 200 | 201;
  body: unknown;
}

/** Hash of the validated content (zod output, so defaults and key order are canonical), batchId excluded. */
function contentHash(value: { batchId?: string }): string {
  const { batchId: _omit, ...rest } = value;
  void _omit;
  return createHash("sha256").update(JSON.stringify(rest)).digest("hex");
}

function once(runId: string, key: string, kind: "metrics" | "steps", hash: string, clash: () => ConflictError, write: (db: RawDb) => unknown, db: RawDb): IngestAnswer {
  return writeTransaction(
    null,
    (db) => {
      const prior = db.prepare(`SELECT "hash", "response" FROM "IngestBatch" WHERE "runId" = ? AND "batchId" = ?`).get(runId, key) as { hash: string; response: string } | undefined;
      if (prior) {
        if (prior.hash !== hash) throw clash();
        return { status: 200 as const, body: JSON.parse(prior.response) };
      }
      const body = write(db);
      db.prepare(`INSERT INTO "IngestBatch" ("runId","batchId","kind","hash","response","createdAt") VALUES (?,?,?,?,?,CURRENT_TIMESTAMP)`).run(runId, key, kind, hash, JSON.stringify(body));
      return { status: 201 as const, body };
    },
    db,
  );
}

/** One step's rollouts: identical content again -> 200 with the stored ids; other content -> 409. */
export function ingestStep(runId: string, input: RolloutStepInput, db: RawDb = getRawDb()): IngestAnswer {
  return once(
    runId,
    `step:${input.step}`,
    "steps",
    contentHash(input),
    () => new ConflictError(`step ${input.step} of run ${runId} is already stored with other content; a step is written once`, [{ path: "body.step", message: `step ${input.step} exists with other content` }]),
    (db) => writeRolloutStep(runId, input, null, db),
    db,
  );
}

/**
 * Consecutive steps of one request, each as ingestStep would store it (same rows, same hash), in one
 * transaction: all stored or none. A step stored before with other content is a 409 naming it
 * (`body.steps.N.step`); the answer lists each step's answer in order, 201 when any was new.
 */
export function ingestSteps(runId: string, input: RolloutStepsBatch, db: RawDb = getRawDb()): IngestAnswer {
  const answers = writeTransaction(
    null,
    (db) =>
      input.steps.map((s, i) => {
        try {
          return ingestStep(runId, s, db);
        } catch (e) {
          if (e instanceof ConflictError) throw new ConflictError(e.message, [{ path: `body.steps.${i}.step`, message: `step ${s.step} exists with other content` }]);
          throw e;
        }
      }),
    db,
  );
  return { status: answers.some((a) => a.status === 201) ? 201 : 200, body: { steps: answers.map((a) => a.body) } };
}

/** Metric points; with a batchId a retry is answered from the record instead of written again. */
export function ingestMetrics(runId: string, input: LogMetrics, db: RawDb = getRawDb()): IngestAnswer {
  const now = Date.now() / 1000;
  // regrouped only when written: a retried batch is answered from its record
  const points = () => metricBodyByKey(input, now);
  if (!input.batchId) return { status: 201, body: writeMetricsByKey(runId, points(), null, db) };
  return once(
    runId,
    `metrics:${input.batchId}`,
    "metrics",
    contentHash(input),
    () => new ConflictError(`metric batch "${input.batchId}" of run ${runId} was already stored with other content`, [{ path: "body.batchId", message: "reused with other content" }]),
    (db) => writeMetricsByKey(runId, points(), null, db),
    db,
  );
}
