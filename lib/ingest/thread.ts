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
import {
  rolloutStepFast,
  rolloutStepInputSchema,
  rolloutStepPartFast,
  rolloutStepPartSchema,
  rolloutStepsBatchFast,
  rolloutStepsBatchSchema,
} from "../schemas/rollouts";
import { ingestMetrics, ingestStep, ingestStepPart, ingestSteps } from "./batches";
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

/** Runs one request; also used inline when the thread is disabled (TURNLENS_INGEST_THREAD=0). */
export function handleIngest(req: IngestRequest, conn?: RawDb): IngestReply {
  try {
    if (!conn) {
      if (!db || dbUrl !== req.databaseUrl) {
        db?.close();
        db = openRawDb(req.databaseUrl);
        dbUrl = req.databaseUrl;
      }
      conn = db;
    }
    makeRoomForDeferred(conn);
    const value = parseJsonBytes(req.bytes);
    const ans =
      req.kind === "steps"
        ? ingestStep(req.runId, rolloutStepFast(value) ?? parseInput(rolloutStepInputSchema, value, "body"), conn)
        : req.kind === "stepPart"
          ? ingestStepPart(req.runId, rolloutStepPartFast(value) ?? parseInput(rolloutStepPartSchema, value, "body"), conn)
          : req.kind === "stepsBatch"
            ? ingestSteps(req.runId, rolloutStepsBatchFast(value) ?? parseInput(rolloutStepsBatchSchema, value, "body"), conn)
            : ingestMetrics(req.runId, metricColumnsLookValid(value) ? value : parseInput(metricBodySchema(value), value, "body"), conn);
    if (req.kind === "metrics") noteAlertCheck(req.runId); // its metric rules, after this answer
    return { id: req.id, ok: true, status: ans.status, body: ans.body };
  } catch (e) {
    const err = e as Error & { issues?: Issue[]; code?: unknown };
    return {
      id: req.id,
      ok: false,
      kind: errorKind(e),
      ...(typeof err?.code === "string" ? { code: err.code } : {}),
      error: err?.message ?? String(e),
      issues: err?.issues ?? [],
    };
  } finally {
    // the stored steps' index and summary after this answer is sent (lib/ingest/deferred.ts)
    if (conn) scheduleDeferred(conn);
  }
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

if (parentPort) parentPort.on("message", (req: IngestRequest) => parentPort!.postMessage(handleIngest(req)));
else if (process.send && process.env.TURNLENS_INGEST_CHILD === "1") {
  // an ingest process (PostgreSQL, lib/ingest/pool.ts): same requests over its IPC channel; it ends with its server
  process.on("message", (req: IngestRequest) => process.send!(handleIngest(req)));
  process.on("disconnect", () => process.exit(0));
}
