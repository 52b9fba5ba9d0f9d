// The server side of ingest: hands raw ingest bodies to workers off the event loop (SQLite: one
// thread, it has one writer anyway; PostgreSQL: a few processes writing at once) and answers 429
// when too many are waiting, before their bodies are read, so a flood of writers slows down instead
// of piling bodies up in memory.
import path from "node:path";
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

// Taken at run time: Next's bundler would otherwise try to bundle the workers' entry (it runs from source through tsx).
const { Worker } = process.getBuiltinModule("node:worker_threads") as typeof import("node:worker_threads");
const { fork } = process.getBuiltinModule("node:child_process") as typeof import("node:child_process");
const os = process.getBuiltinModule("node:os") as typeof import("node:os");

/**
 * Ingest processes on PostgreSQL (TURNLENS_INGEST_PROCESSES, default 2). The libpq addon loads in
 * one thread per process, so PostgreSQL's ingest runs in child processes, each with its own
 * connection; several of them write to different runs at once (run-scoped row locks, see
 * lib/db/raw.ts writeTransaction). SQLite has one writer, so it gets one thread.
 */
const PG_PROCESSES = Math.max(1, Number(process.env.TURNLENS_INGEST_PROCESSES ?? 2) || 2);

/** One ingest worker (a thread or a child process) and the requests it has not answered yet. */
interface Lane {
  send(req: IngestRequest): void;
  pending: Map<number, { resolve: (r: IngestReply) => void; reject: (e: Error) => void }>;
}

const lanes: (Lane | null)[] = [];

/**
 * Ingest is background work beside the dashboard: its thread (SQLite) or processes (PostgreSQL) run
 * at a lower CPU priority, the Unix nice value TURNLENS_INGEST_NICE (default 10, 0 to 19), so a
 * read gets a core first when both want one, and ingest still has every core nobody else wants.
 * On 2 cores, 64 readers beside 8 step writers, runs of 10 and 0 taken in turn (docs/scale.md
 * section 1): PostgreSQL 338 reads/s against 266 (mean of 4 cells each), the writers 18-20 steps/s
 * either way; SQLite 427 against 384. Checked by serve.sh at start and before any ingest runs.
 */
export function ingestNice(env: Record<string, string | undefined> = process.env): number {
  const v = env.TURNLENS_INGEST_NICE ?? "10";
  if (!/^\d{1,2}$/.test(v) || Number(v) > 19) throw new Error(`TURNLENS_INGEST_NICE must be a whole number from 0 to 19 (got ${JSON.stringify(v)})`);
  return Number(v);
}

function newLane(slot: number, pg: boolean): Lane {
  const pending: Lane["pending"] = new Map();
  const boot = path.join(projectRoot(), "lib", "ingest", "thread-boot.mjs");
  const answer = (r: IngestReply) => {
    pending.get(r.id)?.resolve(r);
    pending.delete(r.id);
  };
  const fail = (e: Error) => {
    if (lanes[slot] === lane) lanes[slot] = null; // the next request starts a fresh one
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  let lane: Lane;
  const env = { ...process.env, TURNLENS_INGEST_NICE: String(ingestNice()) };
  // A step's parsed body and packed columns (tens of MB for an ALFWorld step) live until its answer:
  // in V8's default 16 MB semi-spaces they are copied by several scavenges; in 64 MB most die
  // before one. In-process ingest of ALFWorld steps (6,400 turns): 116 against 138-141 ms of CPU a step.
  const SEMI_SPACE_MB = 64;
  if (pg) {
    // advanced serialization carries the body's Uint8Array as bytes (no JSON of it)
    const child = fork(boot, [], {
      execArgv: [`--max-semi-space-size=${SEMI_SPACE_MB}`],
      serialization: "advanced",
      env: { ...env, TURNLENS_INGEST_CHILD: "1" },
      stdio: "inherit",
    });
    // an idle process never keeps its parent alive; one with requests in flight does
    child.unref();
    child.channel?.unref();
    child.on("message", (r: IngestReply) => {
      answer(r);
      if (pending.size === 0) child.channel?.unref();
    });
    child.on("error", fail);
    child.on("exit", (code, signal) => fail(new Error(`ingest process exited (${signal ?? `code ${code}`})`)));
    lane = {
      send: (req) => {
        child.channel?.ref();
        child.send(req);
      },
      pending,
    };
  } else {
    // a worker's young generation is its two semi-spaces and one more of their size
    const w = new Worker(boot, { env, resourceLimits: { maxYoungGenerationSizeMb: 3 * SEMI_SPACE_MB } });
    w.unref(); // an idle thread never keeps the process alive
    w.on("message", answer);
    w.on("error", fail);
    w.on("exit", (code) => fail(new Error(`ingest thread exited (code ${code})`)));
    // the body's buffer moves to the thread (no copy on this event loop)
    lane = { send: (req) => w.postMessage(req, [req.bytes.buffer as ArrayBuffer]), pending };
  }
  return lane;
}

/**
 * Readers first. An ingest process and its PostgreSQL backend keep about one core busy, and this
 * server process with its own backend needs one to answer the dashboard. While the server is
 * answering reads (a GET in the last READS_RECENT_MS), a new ingest request goes only to the
 * processes that leave it that core (cores - 1, at least one); otherwise to any of them. Measured on
 * 2 cores (docs/scale.md section 1): 64 readers beside 8 step writers got 480 reads/s with one ingest
 * process against 330 with two, and the writers 31 steps/s against 28; writers alone got 54 steps/s
 * with two processes against 35 with one.
 */
const READS_RECENT_MS = 250;
let lastReadAt = Number.NEGATIVE_INFINITY;

/** The server answered a read (lib/api/route.ts calls it for every GET). */
export function noteRead(now = performance.now()): void {
  lastReadAt = now;
}

/** How many ingest processes a new request may go to now (PostgreSQL; SQLite has its one thread). */
export function ingestLanesNow(now = performance.now()): number {
  if (now - lastReadAt > READS_RECENT_MS) return PG_PROCESSES;
  return Math.min(PG_PROCESSES, Math.max(1, os.availableParallelism() - 1));
}

/** The lane with the fewest unanswered requests among those it may use now (starting it if needed). */
function pickLane(pg: boolean): Lane {
  const n = pg ? ingestLanesNow() : 1;
  let best = -1;
  for (let i = 0; i < n; i++) {
    const l = lanes[i];
    if (!l) {
      best = i;
      break;
    }
    if (best < 0 || l.pending.size < (lanes[best]?.pending.size ?? 0)) best = i;
  }
  const lane = lanes[best] ?? newLane(best, pg);
  lanes[best] = lane;
  return lane;
}

let nextId = 1;
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
  if (process.env.TURNLENS_INGEST_THREAD === "0") {
    const { handleIngestAsync } = await import("./thread");
    reply = await handleIngestAsync(req);
  } else {
    const lane = pickLane(!connectsFromThreads(req.databaseUrl));
    reply = await new Promise<IngestReply>((resolve, reject) => {
      lane.pending.set(req.id, { resolve, reject });
      lane.send(req);
    });
  }
  if (reply.ok) return { status: reply.status, body: reply.body };
  // the thread's error, rebuilt with its kind so lib/api maps it as if thrown here
  if (reply.kind) throw new DomainError(reply.kind, reply.error, reply.issues);
  throw Object.assign(new Error(reply.error), reply.code ? { code: reply.code } : {}); // a full disk keeps its code (507)
}
