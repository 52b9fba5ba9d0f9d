// Idempotent ingest writes. A client that lost a response retries; the retry must be stored once.
// Each write is recorded in IngestBatch with a hash of its content, in the same transaction as the
// write itself: a repeat with the same content gets the stored answer (200), a repeat with other
// content a 409 naming what clashes. Steps are keyed by their step number (a step is written once),
// metric batches by the client's batchId.
import { createHash } from "node:crypto";
import { metricBodyByKey, writeMetricsByKey } from "../db/metrics";
import { stepExists, writeRolloutStep } from "../db/rollouts";
import { addStepPart, deleteStepParts, otherPartCount, priorBatch, recordBatch, stepPartBodies } from "../db/ingest-batches";
import { getRawDb, writeTransaction, type RawDb } from "../db/raw";
import type { LogMetrics } from "../schemas/metrics";
import type { RolloutStepInput, RolloutStepPart, RolloutStepsBatch } from "../schemas/rollouts";
import { ConflictError } from "../schemas/errors";
import { deferStepWork } from "./deferred";

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

function once(
  runId: string,
  key: string,
  kind: "metrics" | "steps",
  hash: string,
  clash: () => ConflictError,
  write: (db: RawDb) => unknown,
  db: RawDb,
): IngestAnswer {
  return writeTransaction(
    null,
    (db) => {
      const prior = priorBatch(runId, key, db);
      if (prior) {
        if (prior.hash !== hash) throw clash();
        return { status: 200 as const, body: JSON.parse(prior.response) };
      }
      const body = write(db);
      recordBatch(runId, key, kind, hash, body, db);
      return { status: 201 as const, body };
    },
    db,
    { runId },
  );
}

/** One step's rollouts: identical content again -> 200 with the stored ids; other content -> 409. */
export function ingestStep(runId: string, input: RolloutStepInput, db: RawDb = getRawDb()): IngestAnswer {
  return once(
    runId,
    `step:${input.step}`,
    "steps",
    contentHash(input),
    () =>
      new ConflictError(`step ${input.step} of run ${runId} is already stored with other content; a step is written once`, [
        { path: "body.step", message: `step ${input.step} exists with other content` },
      ]),
    (db) => {
      const stored = writeRolloutStep(runId, input, null, db, "deferred");
      deferStepWork(runId, stored.stepId, input); // after the answer (lib/ingest/deferred.ts)
      return stored;
    },
    db,
  );
}

/**
 * The steps of one request (in increasing order, each once: the schema checks), each as ingestStep would store it (same rows, same hash), in one
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
          if (e instanceof ConflictError)
            throw new ConflictError(e.message, [{ path: `body.steps.${i}.step`, message: `step ${s.step} exists with other content` }]);
          throw e;
        }
      }),
    db,
    { runId },
  );
  return { status: answers.some((a) => a.status === 201) ? 201 : 200, body: { steps: answers.map((a) => a.body) } };
}

/**
 * One part of a step sent in parts. Each part is idempotent on its own (recorded like a batch:
 * identical again -> 200 with its first answer, other content -> 409). Parts wait in IngestStepPart;
 * the part that completes the step stores it from all of them in the same transaction (as ingestStep
 * would store the whole step: same rows, same record) and deletes them, so readers see the step
 * whole or not at all. Answers {complete, part, parts, received} and, once complete, the step's {stepId, turns}.
 */
export function ingestStepPart(runId: string, input: RolloutStepPart, db: RawDb = getRawDb()): IngestAnswer {
  const { part, parts, batchId: _b, ...content } = input;
  void _b;
  const clash = (message: string, path = "body.part") => new ConflictError(`step ${input.step} of run ${runId}: ${message}`, [{ path, message }]);
  return once(
    runId,
    `steppart:${input.step}:${part}`,
    "steps",
    contentHash(input),
    () => clash(`part ${part} was already stored with other content`),
    (db) => {
      if (stepExists(runId, input.step, db)) throw clash("the step is already stored; a step is written once", "body.step");
      const other = otherPartCount(runId, input.step, parts, db);
      if (other !== undefined) throw clash(`its other parts say it has ${other} parts, this one ${parts}`, "body.parts");
      const received = addStepPart(runId, input.step, part, parts, content, db);
      if (received < parts) return { complete: false, part, parts, received };
      const bodies = stepPartBodies<Omit<RolloutStepInput, "batchId">>(runId, input.step, db);
      const head = bodies[0];
      const same = (x: unknown, y: unknown) => JSON.stringify(x ?? null) === JSON.stringify(y ?? null);
      for (const [i, b] of bodies.entries())
        for (const k of ["estimator", "params", "diagnostics"] as const)
          if (!same(b[k], head[k])) throw clash(`part ${i} has another ${k} than part 0; every part carries the step's own`, `body.${k}`);
      const step: RolloutStepInput = {
        step: input.step,
        ...(head.estimator !== undefined ? { estimator: head.estimator } : {}),
        ...(head.params !== undefined ? { params: head.params } : {}),
        ...(head.diagnostics !== undefined ? { diagnostics: head.diagnostics } : {}),
        groups: bodies.flatMap((b) => b.groups),
      };
      // each part's uids are unique (its schema); across parts they are checked here
      const seen = new Set<string>();
      for (const g of step.groups) {
        if (seen.has(g.uid)) throw clash(`group uid "${g.uid}" is in two parts`, "body.groups");
        seen.add(g.uid);
      }
      // stored as ingestStep stores a whole step, with its record: the same step sent again in one piece is answered 200
      const stored = ingestStep(runId, step, db).body as object;
      deleteStepParts(runId, input.step, db);
      return { complete: true, part, parts, received, ...stored };
    },
    db,
  );
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
    () =>
      new ConflictError(`metric batch "${input.batchId}" of run ${runId} was already stored with other content`, [
        { path: "body.batchId", message: "reused with other content" },
      ]),
    (db) => writeMetricsByKey(runId, points(), null, db),
    db,
  );
}
