// A step's text streams compressed on a thread of their own while the ingest thread plans, hashes
// and deflates the rest of the step (lib/db/rollouts.ts packStepWith): on 2 cores an ALFWorld step's
// ~30 ms of Brotli then runs beside the ingest thread's work instead of after it. The thread is
// started from the ingest thread (or process), so it runs at the same lowered CPU priority
// (lib/ingest/pool.ts ingestNice: Linux threads inherit it); libuv's pool would run it at the
// server's own. Should the thread fail, the streams are compressed here instead.
import path from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import { projectRoot } from "../db/url";
import { compressStream, type StreamCompressor } from "../db/trajectory-pack";

// Taken at run time, as lib/ingest/pool.ts takes it: Next's bundler would otherwise try to bundle the thread's entry.
const { Worker } = process.getBuiltinModule("node:worker_threads") as typeof import("node:worker_threads");
type Worker = import("node:worker_threads").Worker;

interface Request {
  id: number;
  jsons: string[];
}
type Reply = { id: number; out: Uint8Array[] } | { id: number; error: string };

let worker: Worker | null = null;
const pending = new Map<number, { resolve: (b: Buffer[]) => void; reject: (e: Error) => void }>();
let nextId = 1;
const reported = new Set<string>(); // each failure logged once, not once a group

function start(): Worker {
  const w = new Worker(path.join(projectRoot(), "lib", "ingest", "thread-boot.mjs"), { workerData: { role: "compress" } });
  w.unref(); // an idle thread never keeps its process alive
  w.on("message", (r: Reply) => {
    const p = pending.get(r.id);
    pending.delete(r.id);
    if (pending.size === 0) w.unref(); // a reply refs the thread again
    if (!p) return;
    if ("error" in r) p.reject(new Error(r.error));
    else p.resolve(r.out.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)));
  });
  const fail = (e: Error) => {
    if (worker === w) worker = null; // the next step starts a fresh one
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  w.on("error", fail);
  w.on("exit", (code) => fail(new Error(`compression thread exited (code ${code})`)));
  return w;
}

/** Compresses each stream as compressStream does, on the compression thread (here, should it fail). */
export const compressOnThread: StreamCompressor = async (jsons) => {
  try {
    worker ??= start();
    const id = nextId++;
    const w = worker;
    return await new Promise<Buffer[]>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      w.ref();
      w.postMessage({ id, jsons } satisfies Request);
    });
  } catch (e) {
    const why = (e as Error).message;
    if (!reported.has(why)) console.error(`ingest: the compression thread failed (${why}); compressing on the ingest thread meanwhile`);
    reported.add(why);
    return jsons.map(compressStream);
  }
};

// the compression thread itself
if (parentPort && (workerData as { role?: string } | null)?.role === "compress") {
  const port = parentPort;
  port.on("message", ({ id, jsons }: Request) => {
    try {
      port.postMessage({ id, out: jsons.map(compressStream) } satisfies Reply);
    } catch (e) {
      port.postMessage({ id, error: (e as Error).message } satisfies Reply);
    }
  });
}
