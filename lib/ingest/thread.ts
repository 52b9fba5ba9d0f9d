// The ingest worker: parses, validates and stores large ingest bodies (a 48 MB step) away from the
// server's event loop, so dashboard reads keep answering meanwhile. It runs as a thread (SQLite) or
// as one of a few child processes (PostgreSQL: the libpq addon loads in one thread per process), each
// with its own connection (SQLite in WAL mode or PostgreSQL: readers are not blocked by its writes).
import { setPriority } from "node:os";
import { parentPort } from "node:worker_threads";
import { errorKind, parseInput, type ErrorKind, type Issue } from "../schemas/errors";
import { parseJsonBytes } from "../schemas/json-limits";
import { openRawDb, type RawDb } from "../db/raw";
import { metricBodySchema, metricColumnsLookValid } from "../schemas/metrics";
import type { LogMetrics } from "../schemas/metrics";
import type { PackedStep } from "../db/rollouts";
import {
  type RolloutStepInput,
  type RolloutStepPart,
  type RolloutStepsBatch,
  rolloutStepFast,
  rolloutStepInputSchema,
  rolloutStepPartFast,
  rolloutStepPartSchema,
  rolloutStepsBatchFast,
  rolloutStepsBatchSchema,
} from "../schemas/rollouts";
import { ingestMetrics, ingestStep, ingestStepPart, ingestSteps, prepareStep, type IngestAnswer } from "./batches";
import { makeRoomForDeferred, noteAlertCheck, scheduleDeferred } from "./deferred";

export interface IngestRequest {
  id: number;
  kind: "metrics" | "steps" | "stepsBatch" | "stepPart";
  runId: string;
  /** the request body as received (UTF-8 JSON) */
  bytes: Uint8Array;
  databaseUrl: string;
}

export type IngestReply =
  | { id: number; ok: true; status: number; body: unknown }
  /** a failure: `kind` of one of our errors (rebuilt on the server side), none for an unexpected one; `code` a system or SQLite error's (a full disk) */
  | { id: number; ok: false; kind?: ErrorKind; code?: string; error: string; issues: Issue[] };

let db: RawDb | null = null;
let dbUrl = "";

function connection(req: IngestRequest, conn?: RawDb): RawDb {
  if (conn) return conn;
  if (!db || dbUrl !== req.databaseUrl) {
    db?.close();
    db = openRawDb(req.databaseUrl);
    dbUrl = req.databaseUrl;
  }
  return db;
}

type Validated =
  | { kind: "steps"; value: RolloutStepInput }
  | { kind: "stepPart"; value: RolloutStepPart }
  | { kind: "stepsBatch"; value: RolloutStepsBatch }
  | { kind: "metrics"; value: LogMetrics };

function validated(req: IngestRequest): Validated {
  const value = parseJsonBytes(req.bytes);
  switch (req.kind) {
    case "steps":
      return { kind: req.kind, value: rolloutStepFast(value) ?? parseInput(rolloutStepInputSchema, value, "body") };
    case "stepPart":
      return { kind: req.kind, value: rolloutStepPartFast(value) ?? parseInput(rolloutStepPartSchema, value, "body") };
    case "stepsBatch":
      return { kind: req.kind, value: rolloutStepsBatchFast(value) ?? parseInput(rolloutStepsBatchSchema, value, "body") };
    default:
      return { kind: "metrics", value: metricColumnsLookValid(value) ? value : parseInput(metricBodySchema(value), value, "body") };
  }
}

/** Stores a validated body; `prepared`: its steps packed already (prepareStep), in order. */
function store(runId: string, v: Validated, conn: RawDb, prepared?: PackedStep[]): IngestAnswer {
  switch (v.kind) {
    case "steps":
      return ingestStep(runId, v.value, conn, prepared?.[0]);
    case "stepPart":
      return ingestStepPart(runId, v.value, conn);
    case "stepsBatch":
      return ingestSteps(runId, v.value, conn, prepared);
    case "metrics": {
      const ans = ingestMetrics(runId, v.value, conn);
      noteAlertCheck(runId); // its metric rules, after this answer
      return ans;
    }
  }
}

function failure(req: IngestRequest, e: unknown): IngestReply {
  const err = e as Error & { issues?: Issue[]; code?: unknown };
  return {
    id: req.id,
    ok: false,
    kind: errorKind(e),
    ...(typeof err?.code === "string" ? { code: err.code } : {}),
    error: err?.message ?? String(e),
    issues: err?.issues ?? [],
  };
}

/**
 * Runs one request here, start to end (the import job runs it inside its own fenced transaction);
 * `pre`: its body validated and its steps packed already (handleIngestAsync).
 */
export function handleIngest(req: IngestRequest, conn?: RawDb, pre?: { v: Validated; prepared: PackedStep[] }): IngestReply {
  let c: RawDb | undefined;
  try {
    c = connection(req, conn);
    makeRoomForDeferred(c);
    const ans = store(req.runId, pre?.v ?? validated(req), c, pre?.prepared);
    return { id: req.id, ok: true, status: ans.status, body: ans.body };
  } catch (e) {
    return failure(req, e);
  } finally {
    // the stored steps' index and summary after this answer is sent (lib/ingest/deferred.ts)
    if (c) scheduleDeferred(c);
  }
}

/**
 * The same answer as handleIngest, a step's text streams compressed on the compression thread
 * while this one plans the rest (lib/ingest/batches.ts prepareStep): what the ingest thread and
 * processes run, one request at a time (serve).
 */
export async function handleIngestAsync(req: IngestRequest): Promise<IngestReply> {
  if (req.kind !== "steps" && req.kind !== "stepsBatch") return handleIngest(req); // nothing to compress meanwhile
  let pre: { v: Validated; prepared: PackedStep[] };
  try {
    const v = validated(req);
    const steps = v.kind === "steps" ? [v.value] : v.kind === "stepsBatch" ? v.value.steps : [];
    const root = (i: number) => (v.kind === "steps" ? "body" : `body.steps.${i}`);
    pre = { v, prepared: await Promise.all(steps.map((s, i) => prepareStep(s, root(i)))) };
  } catch (e) {
    return failure(req, e); // refused before anything is stored
  }
  return handleIngest(req, undefined, pre);
}

// Requests in arrival order, each stored before the next starts (a step waiting for its
// compression holds the line): the same order of commits as when each ran start to end.
let line: Promise<unknown> = Promise.resolve();
function serve(req: IngestRequest, send: (r: IngestReply) => void): void {
  // handleIngestAsync answers every failure itself; anything else still gets an answer, never a hang
  line = line
    .then(() => handleIngestAsync(req))
    .catch((e) => failure(req, e))
    .then(send)
    .catch((e) => console.error(`ingest: could not answer (${(e as Error).message})`));
}

// Background work (lib/ingest/pool.ts ingestNice, which checked the value): lower this thread's
// CPU priority. Linux keeps a nice value per thread, so in the SQLite thread this leaves the
// server's event loop as it was; elsewhere only a process of its own (PostgreSQL's) lowers it.
const nice = Number(process.env.TURNLENS_INGEST_NICE);
if (nice > 0 && (process.env.TURNLENS_INGEST_CHILD === "1" || (parentPort && process.platform === "linux"))) {
  try {
    setPriority(nice);
  } catch (e) {
    console.error(`ingest: could not lower the CPU priority to nice ${nice} (${(e as Error).message}); ingest runs at the server's`);
  }
}

if (parentPort) parentPort.on("message", (req: IngestRequest) => serve(req, (r) => parentPort!.postMessage(r)));
else if (process.send && process.env.TURNLENS_INGEST_CHILD === "1") {
  // an ingest process (PostgreSQL, lib/ingest/pool.ts): same requests over its IPC channel; it ends with its server
  process.on("message", (req: IngestRequest) => serve(req, (r) => process.send!(r)));
  process.on("disconnect", () => process.exit(0));
}
