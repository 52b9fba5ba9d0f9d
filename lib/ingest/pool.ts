// The server side of the ingest thread: hands raw ingest bodies to one worker thread (SQLite has
// one writer anyway) and answers 429 when too many are waiting, before their bodies are read, so a
// flood of writers slows down instead of piling bodies up in memory.
import path from "node:path";
import type { Worker as WorkerType } from "node:worker_threads";
import { DomainError } from "../schemas/errors";
import { databaseUrl, projectRoot } from "../db/url";
import { connectsFromThreads } from "../db/raw";
import type { IngestReply, IngestRequest } from "./thread";

/** Ingest requests in flight (running or waiting) before new ones get 429 (TURNLENS_INGEST_QUEUE). */
const MAX_IN_FLIGHT = Number(process.env.TURNLENS_INGEST_QUEUE ?? 16);

export class OverloadedError extends DomainError {
  constructor() {
    super("overloaded", `the server is busy with ${MAX_IN_FLIGHT} ingest requests; retry after the Retry-After delay`, [
      { path: "body", message: "server busy" },
    ]);
  }
}

// Taken at run time: Next's bundler would otherwise try to bundle the thread's entry (it runs from source through tsx).
const { Worker } = process.getBuiltinModule("node:worker_threads") as typeof import("node:worker_threads");

let worker: WorkerType | null = null;
let nextId = 1;
const pending = new Map<number, { resolve: (r: IngestReply) => void; reject: (e: Error) => void }>();

function thread(): WorkerType {
  if (worker) return worker;
  const w = new Worker(path.join(projectRoot(), "lib", "ingest", "thread-boot.mjs"));
  w.unref(); // an idle thread never keeps the process alive
  w.on("message", (r: IngestReply) => {
    pending.get(r.id)?.resolve(r);
    pending.delete(r.id);
  });
  const fail = (e: Error) => {
    worker = null;
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  w.on("error", fail);
  w.on("exit", (code) => fail(new Error(`ingest thread exited (code ${code})`)));
  worker = w;
  return w;
}

let inFlight = 0;

/**
 * Takes one of the TURNLENS_INGEST_QUEUE slots, or throws OverloadedError (429). Routes take it before
 * reading the body (route option `admit`), so a flood of large bodies is refused unread instead of
 * buffered; the returned function gives the slot back (once, however often it is called).
 */
export function admitIngest(): () => void {
  if (inFlight >= MAX_IN_FLIGHT) throw new OverloadedError();
  inFlight++;
  let held = true;
  return () => {
    if (held) inFlight--;
    held = false;
  };
}

/** Parses, validates and stores one ingest body off the event loop (its route admitted it: admitIngest); resolves with status and body. */
export async function runIngest(kind: IngestRequest["kind"], runId: string, bytes: Uint8Array): Promise<{ status: number; body: unknown }> {
  const req: IngestRequest = { id: nextId++, kind, runId, bytes, databaseUrl: databaseUrl() };
  let reply: IngestReply;
  // Where the store cannot be opened from a thread (PostgreSQL), the body is stored inline.
  if (process.env.TURNLENS_INGEST_THREAD === "0" || !connectsFromThreads(req.databaseUrl)) {
    const { handleIngest } = await import("./thread");
    reply = handleIngest(req);
  } else {
    reply = await new Promise<IngestReply>((resolve, reject) => {
      pending.set(req.id, { resolve, reject });
      // the body's buffer moves to the thread (no copy on this event loop)
      thread().postMessage(req, [bytes.buffer as ArrayBuffer]);
    });
  }
  if (reply.ok) return { status: reply.status, body: reply.body };
  // the thread's error, rebuilt with its kind so lib/api maps it as if thrown here
  if (reply.kind) throw new DomainError(reply.kind, reply.error, reply.issues);
  throw Object.assign(new Error(reply.error), reply.code ? { code: reply.code } : {}); // a full disk keeps its code (507)
}
