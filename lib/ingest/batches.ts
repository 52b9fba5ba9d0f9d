// Idempotent ingest writes. A client that lost a response retries; the retry must be stored once.
// Each write is recorded in IngestBatch with a hash of its content, in the same transaction as the
// write itself: a repeat with the same content gets the stored answer (200), a repeat with other
// content a 409 naming what clashes. Steps are keyed by their step number (a step is written once),
// metric batches by the client's batchId.
import { createHash } from "node:crypto";
import { metricBodyByKey } from "../db/metric-points";
import { writeMetricsByKey, writeMetricsIn } from "../db/metric-writes";
import { packStep, packStepWith, stepExists, writeRolloutStep, type PackedStep } from "../db/rollouts";
import { compressOnThread } from "./compress-thread";
import {
  addStepPart,
  deleteBatch,
  deleteStepParts,
  discardStepParts,
  heldPartsBytes,
  otherPartCount,
  priorBatch,
  recordBatch,
  stalePartSteps,
  stepPartBodies,
  stepPartKey,
  type DiscardedStep,
} from "../db/ingest-batches";
import { getRawDb, writeTransaction, type RawDb } from "../db/raw";
import type { LogMetrics, MetricColumnsInput } from "../schemas/metrics";
import type { RolloutStepInput, RolloutStepPart, RolloutStepsBatch } from "../schemas/rollouts";
import { ConflictError, DomainError } from "../schemas/errors";
import { stepParams } from "../schemas/step-params";
import { deferStepWork } from "./deferred";

export interface IngestAnswer {
  status: 200 | 201;
  body: unknown;
}

/** Hash of the validated content (zod output, so defaults and key order are canonical), batchId excluded: a metric batch's or a step part's. */
function contentHash(value: { batchId?: string }): string {
  const { batchId: _omit, ...rest } = value;
  void _omit;
  return createHash("sha256").update(JSON.stringify(rest)).digest("hex");
}

/**
 * Records a write once. `hash` is the content's; `sameContent` says whether a stored record's hash
 * is this content's: by default the same hash, and for a kind whose hash changed, the hash an older
 * server recorded for the same content too (a retry across an upgrade is not a clash).
 */
function once(
  runId: string,
  key: string,
  kind: "metrics" | "steps",
  hash: string,
  clash: () => ConflictError,
  write: (db: RawDb) => unknown,
  db: RawDb,
  sameContent: (stored: string) => boolean = (stored) => stored === hash,
): IngestAnswer {
  return writeTransaction(
    null,
    (db) => {
      const prior = priorBatch(runId, key, db);
      if (prior) {
        if (!sameContent(prior.hash)) throw clash();
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

/** The step with its params as stored: checked against its estimator, in TurnLens's names (lib/schemas/step-params.ts); `root` names the step in errors. */
function withStepParams<T extends RolloutStepInput>(s: T, root: string): T {
  const params = stepParams(s.estimator, s.params, root);
  return params === s.params ? s : { ...s, params };
}

/**
 * One step's rollouts: identical content again -> 200 with the stored ids; other content -> 409.
 * Packed before its transaction (the content hash comes from the packed columns, and the write
 * lock is held only for the inserts); `packed`: packed already (prepareStep).
 */
export function ingestStep(runId: string, given: RolloutStepInput, db: RawDb = getRawDb(), packed?: PackedStep): IngestAnswer {
  const input = withStepParams(given, "body");
  const p = packed ?? packStep(input);
  return once(
    runId,
    `step:${input.step}`,
    "steps",
    p.hash,
    () =>
      new ConflictError(`step ${input.step} of run ${runId} is already stored with other content; a step is written once`, [
        { path: "body.step", message: `step ${input.step} exists with other content` },
      ]),
    (db) => {
      const stored = writeRolloutStep(runId, input, null, db, "deferred", p);
      deferStepWork(runId, stored.stepId, input); // after the answer (lib/ingest/deferred.ts)
      return stored;
    },
    db,
    // a step recorded with the hash of its JSON (before its hash came from its packed columns): a retry across an upgrade
    (stored) => stored === p.hash || stored === contentHash(input),
  );
}

/**
 * A step packed for ingestStep before it runs, its text streams compressed on the compression
 * thread (lib/ingest/compress-thread.ts) while this thread plans, hashes and deflates the rest.
 * `root` names the step in errors.
 */
export function prepareStep(given: RolloutStepInput, root = "body"): Promise<PackedStep> {
  return packStepWith(withStepParams(given, root), compressOnThread);
}

/**
 * The steps of one request (in increasing order, each once: the schema checks), each as ingestStep would store it (same rows, same hash), in one
 * transaction: all stored or none. A step stored before with other content is a 409 naming it
 * (`body.steps.N.step`); the answer lists each step's answer in order, 201 when any was new.
 */
export function ingestSteps(runId: string, input: RolloutStepsBatch, db: RawDb = getRawDb(), prepared?: PackedStep[]): IngestAnswer {
  const steps = input.steps.map((s, i) => withStepParams(s, `body.steps.${i}`));
  const answers = writeTransaction(
    null,
    (db) =>
      steps.map((s, i) => {
        try {
          return ingestStep(runId, s, db, prepared?.[i]);
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

/** A step in parts may hold at most this many bytes of JSON (TURNLENS_MAX_STEP_PARTS_MB, MB of 10^6 bytes); its characters are no more. */
export function maxStepPartsBytes(env: Record<string, string | undefined> = process.env): number {
  const v = env.TURNLENS_MAX_STEP_PARTS_MB ?? "256";
  const mb = Number(v);
  // the step is hashed as one JSON string when it completes: V8's longest string is 2^29 - 24 characters
  if (!/^\d+(\.\d+)?$/.test(v) || !(mb > 0) || mb > 400)
    throw new Error(`TURNLENS_MAX_STEP_PARTS_MB must be a number of MB above 0 and at most 400 (got ${JSON.stringify(v)})`);
  return Math.round(mb * 1e6);
}

/** How long a step's parts wait for the rest after its newest one arrived (TURNLENS_STEP_PARTS_TTL_HOURS), in ms. */
export function stepPartsTtlMs(env: Record<string, string | undefined> = process.env): number {
  const v = env.TURNLENS_STEP_PARTS_TTL_HOURS ?? "24";
  const h = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || !(h > 0)) throw new Error(`TURNLENS_STEP_PARTS_TTL_HOURS must be a number of hours above 0 (got ${JSON.stringify(v)})`);
  return h * 3_600_000;
}

/** Drops the waiting parts of every step (of any run) whose newest part is older than the time limit, each in its run's own transaction. */
export function expireStepParts(now: number, db: RawDb = getRawDb()): DiscardedStep[] {
  const cutoff = new Date(now - stepPartsTtlMs());
  const out: DiscardedStep[] = [];
  // checked again under the run's lock: a part may have arrived since
  for (const { runId, step } of stalePartSteps(cutoff, db))
    out.push(
      ...writeTransaction(
        null,
        (db) => (stalePartSteps(cutoff, db).some((s) => s.runId === runId && s.step === step) ? discardStepParts(runId, step, db) : []),
        db,
        { runId },
      ),
    );
  return out;
}

/**
 * One part of a step sent in parts. Each part is idempotent on its own (recorded like a batch:
 * identical again -> 200 with its first answer). Parts wait in IngestStepPart; the part that
 * completes the step stores it from all of them in the same transaction (as ingestStep would store
 * the whole step: same rows, same record) and deletes them, so readers see the step whole or not at
 * all. While the step is incomplete, a part sent again with other content replaces the waiting one
 * (a corrected resend: another `parts` count, other groups); once the step is stored, other content
 * is a 409. The step's parts together hold at most maxStepPartsBytes of JSON: the part that would
 * cross it is a 413 and the step's waiting parts are dropped with it. Parts wait at most
 * stepPartsTtlMs after the step's newest one, until the run finishes, or until discarded
 * (discardHeldParts). Answers {complete, part, parts, received} (and `replaced` when it took a
 * waiting part's place) and, once complete, the step's {stepId, turns}.
 */
export function ingestStepPart(runId: string, given: RolloutStepPart, db: RawDb = getRawDb(), now = Date.now()): IngestAnswer {
  const input = withStepParams(given, "body");
  const { part, parts, batchId: _b, ...content } = input;
  void _b;
  const clash = (message: string, path = "body.part") => new ConflictError(`step ${input.step} of run ${runId}: ${message}`, [{ path, message }]);
  const key = stepPartKey(input.step, part);
  const hash = contentHash(input);
  expireStepParts(now, db);
  try {
    return writeTransaction(
      null,
      (db) => {
        const prior = priorBatch(runId, key, db);
        if (prior?.hash === hash) return { status: 200 as const, body: JSON.parse(prior.response) };
        if (stepExists(runId, input.step, db))
          throw prior ? clash(`part ${part} was already stored with other content`) : clash("the step is already stored; a step is written once", "body.step");
        // a record with other content belongs to the waiting part this one replaces (the step is not stored)
        if (prior) deleteBatch(runId, key, db);
        const other = otherPartCount(runId, input.step, part, parts, db);
        if (other !== undefined)
          throw clash(
            `its other waiting parts say it has ${other} parts, this one ${parts}: resend those with the right count (a resend replaces a waiting part) or discard the step's parts (DELETE /runs/${runId}/steps/parts?step=${input.step})`,
            "body.parts",
          );
        const text = JSON.stringify(content);
        const limit = maxStepPartsBytes();
        const total = heldPartsBytes(runId, input.step, part, db) + Buffer.byteLength(text);
        if (total > limit) throw new StepPartsTooLarge(runId, input.step, total, limit);
        const received = addStepPart(runId, input.step, part, parts, text, new Date(now), db);
        const body =
          received < parts ? { complete: false, part, parts, received } : { complete: true, part, parts, received, ...completeStep(runId, input, clash, db) };
        const answer = prior ? { ...body, replaced: true } : body;
        recordBatch(runId, key, "steps", hash, answer, db);
        return { status: 201 as const, body: answer };
      },
      db,
      { runId },
    );
  } catch (e) {
    // a step that cannot fit leaves nothing behind: its waiting parts go with the refusal
    if (e instanceof StepPartsTooLarge) writeTransaction(null, (db) => discardStepParts(runId, input.step, db), db, { runId });
    throw e;
  }
}

/** The part that would take a step in parts past maxStepPartsBytes: 413 naming the limit. */
class StepPartsTooLarge extends DomainError {
  constructor(runId: string, step: number, total: number, limit: number) {
    const n = (x: number) => x.toLocaleString("en-US");
    const message = `step ${step} of run ${runId}: its parts would hold ${n(total)} bytes of JSON, over the ${n(limit)} a step in parts may hold (${limit / 1e6} MB, TURNLENS_MAX_STEP_PARTS_MB); its waiting parts are dropped`;
    super("too_large", message, [{ path: "body", message: `the step's parts exceed ${n(limit)} bytes of JSON (${limit / 1e6} MB)` }]);
  }
}

/** Stores a step from its waiting parts (all arrived) as ingestStep would store it whole, and deletes them; the step's {stepId, turns}. */
function completeStep(runId: string, input: RolloutStepPart, clash: (message: string, path?: string) => ConflictError, db: RawDb): object {
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
  return stored;
}

/** DELETE /runs/{id}/steps/parts: drops the waiting parts of one step of the run (every step when `step` is undefined). */
export function discardHeldParts(runId: string, step: number | undefined, db: RawDb = getRawDb()): { discarded: DiscardedStep[] } {
  return { discarded: writeTransaction(null, (db) => discardStepParts(runId, step ?? null, db), db, { runId }) };
}

/** Metric points; with a batchId a retry is answered from the record instead of written again. */
export function ingestMetrics(runId: string, input: LogMetrics, db: RawDb = getRawDb()): IngestAnswer {
  const now = Date.now() / 1000;
  // regrouped only when written: a retried batch is answered from its record
  const points = () => metricBodyByKey(input, now);
  if (!input.batchId) return { status: 201, body: writeMetricsByKey(runId, points(), null, db) };
  const hash = "steps" in input ? columnsHash(input) : contentHash(input);
  return once(
    runId,
    `metrics:${input.batchId}`,
    "metrics",
    hash,
    () =>
      new ConflictError(`metric batch "${input.batchId}" of run ${runId} was already stored with other content`, [
        { path: "body.batchId", message: "reused with other content" },
      ]),
    // in once's transaction on the run: no savepoint of its own
    (db) => writeMetricsIn(db, runId, points()),
    db,
    // a batch recorded before columnsHash existed carries contentHash (a retry across an upgrade)
    (stored) => stored === hash || (!stored.startsWith(COLUMNS_HASH) && stored === contentHash(input)),
  );
}

/** columnsHash's prefix: a record's hash without it is a contentHash. */
const COLUMNS_HASH = "c1:";
const VALUE_KIND: Record<string, number> = { NaN: 2, Infinity: 3, "-Infinity": 4 };

/**
 * A columnar metric batch's content hash from its numbers' bytes, batchId excluded: contentHash's
 * JSON.stringify spends ~0.07 ms on the 1,100 doubles of a request of 1,000 values (the decimal
 * shortest form of each), this ~0.02 ms. Hashed: the keys in order (and whether wall times came) as
 * JSON, then every column (steps, wall times, each key's values) as its length and its values as
 * float64, then a kind byte a value (number, null, "NaN", "Infinity", "-Infinity"): no two contents
 * give the same bytes.
 */
function columnsHash(input: MetricColumnsInput): string {
  const keys = Object.keys(input.values);
  const columns: readonly (number | string | null)[][] = [input.steps, ...(input.wallTimes ? [input.wallTimes] : []), ...keys.map((k) => input.values[k])];
  let size = 0;
  for (const c of columns) size += 1 + c.length;
  const nums = new Float64Array(size);
  const kinds = new Uint8Array(size);
  let at = 0;
  for (const c of columns) {
    nums[at++] = c.length;
    for (let i = 0; i < c.length; i++, at++) {
      const x = c[i];
      if (typeof x === "number") nums[at] = x;
      else kinds[at] = x === null ? 1 : VALUE_KIND[x];
    }
  }
  const h = createHash("sha256").update(JSON.stringify([input.wallTimes !== undefined, keys]));
  return COLUMNS_HASH + h.update(new Uint8Array(nums.buffer)).update(kinds).digest("hex");
}
