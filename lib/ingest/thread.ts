// The ingest thread: parses, validates and stores large ingest bodies (a 48 MB step) away from the
// server's event loop, so dashboard reads keep answering meanwhile. It has its own SQLite
// connection (WAL: the server's readers are not blocked by its write transaction).
import { parentPort } from "node:worker_threads";
import { ApiError, parseOr400 } from "../api/errors";
import { parseJsonText } from "../api/json-limits";
import { openSqlite, type RawDb } from "../db/sqlite";
import { sqlitePath } from "../db/url";
import { logMetricsSchema } from "../schemas/metrics";
import { rolloutStepInputSchema } from "../schemas/rollouts";
import { ingestMetrics, ingestStep } from "./batches";

export interface IngestRequest {
  id: number;
  kind: "metrics" | "steps";
  runId: string;
  /** the request body as received (UTF-8 JSON) */
  bytes: Uint8Array;
  databaseUrl: string;
}

export type IngestReply =
  | { id: number; ok: true; status: number; body: unknown }
  | { id: number; ok: false; status: number; error: string; issues: { path: string; message: string }[]; name?: string };

let db: RawDb | null = null;
let dbUrl = "";

/** Runs one request; also used inline when the thread is disabled (TURNLENS_INGEST_THREAD=0). */
export function handleIngest(req: IngestRequest, conn?: RawDb): IngestReply {
  try {
    if (!conn) {
      if (!db || dbUrl !== req.databaseUrl) {
        db?.close();
        db = openSqlite(sqlitePath(req.databaseUrl));
        dbUrl = req.databaseUrl;
      }
      conn = db;
    }
    const value = parseJsonText(Buffer.from(req.bytes.buffer, req.bytes.byteOffset, req.bytes.byteLength).toString("utf8"));
    const ans =
      req.kind === "steps"
        ? ingestStep(req.runId, parseOr400(rolloutStepInputSchema, value, "body"), conn)
        : ingestMetrics(req.runId, parseOr400(logMetricsSchema, value, "body"), conn);
    return { id: req.id, ok: true, status: ans.status, body: ans.body };
  } catch (e) {
    if (e instanceof ApiError) return { id: req.id, ok: false, status: e.status, error: e.message, issues: e.issues };
    const err = e as Error & { issues?: { path: string; message: string }[] };
    return { id: req.id, ok: false, status: 0, error: err?.message ?? String(e), issues: err?.issues ?? [], name: err?.name };
  }
}

parentPort?.on("message", (req: IngestRequest) => parentPort!.postMessage(handleIngest(req)));
