// npm run bench:metric-ingest — metric ingest through the real HTTP server beside its limit: raw
// SQLite inserts of the same rows into the same schema on the same disk, in one run.
//
// Ingest: the production server (scripts/web-server.mjs) on a fresh SQLite file; one writer posts
// the Python client's request body (columnar: `steps`, `wallTimes`, 10 keys, a `batchId`) one
// request after another on a kept-alive connection (node:http), bodies encoded before the clock starts; timed
// until the last answer. Raw: a second fresh file migrated the same way, in the same directory,
// opened with the server's pragmas (lib/db/sqlite.ts openSqlite: WAL, synchronous NORMAL); one
// prepared single-row INSERT into "Metric" per point, the same (series, step, value, wall time)
// rows, committed once a request's worth of rows (the boundary the server commits at) and, as the
// ceiling, all in one transaction; in a process at the ingest thread's CPU priority
// (TURNLENS_INGEST_NICE, default 10), so that both compete alike for a core other programs use.
// Rounds interleave ingest and raw; the median is printed.
// Options: --points (300000 a cell), --sizes (1000,10000: values a request), --rounds (3).
//   Run from the checkout whose build is served (`node_modules/.bin/next build` first).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ingestNice } from "../lib/ingest/pool";
import { openSqlite } from "../lib/db/sqlite";
import { call, loadAverage, openStore, parseArgs, startServer } from "./bench-store";

// --raw FILE: this script's own child, which times raw inserts into FILE at --nice and prints the rate
const opts = parseArgs(process.argv.slice(2), { points: "300000", sizes: "1000,10000", rounds: "3", raw: "", size: "", nice: "0" });
const POINTS = Number(opts.points);
const SIZES = opts.sizes.split(",").map(Number);
const ROUNDS = Number(opts.rounds);
const KEYS = Array.from({ length: 10 }, (_, i) => `train/k${i}`);
const WALL0 = 1.7e9;
const value = (step: number, k: number) => step * 0.001 + k;

/** The Python client's columnar bodies (clients/python/turnlens/shapes.py columns_body) of `points` values, `size` a request. */
function bodies(points: number, size: number, tag: string): Uint8Array<ArrayBuffer>[] {
  const enc = new TextEncoder();
  const stepsPer = size / KEYS.length;
  const out: Uint8Array<ArrayBuffer>[] = [];
  for (let b = 0, s = 0; s < points / KEYS.length; b++, s += stepsPer) {
    const steps = Array.from({ length: stepsPer }, (_, i) => s + i);
    const values = Object.fromEntries(KEYS.map((k, j) => [k, steps.map((x) => value(x, j))]));
    out.push(enc.encode(JSON.stringify({ steps, wallTimes: steps.map((x) => WALL0 + x), values, batchId: `${tag}:${b}` })));
  }
  return out;
}

// node:http on one kept-alive connection, as the Python client's http.client (fetch costs ~1 ms of CPU a request more)
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(url: URL, headers: Record<string, string>, body: Uint8Array): Promise<[number, string]> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent, headers: { ...headers, "content-length": String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve([res.statusCode ?? 0, Buffer.concat(chunks).toString()]));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** CPU ms of each thread of a process so far (Linux /proc; empty elsewhere). */
function threadCpu(pid: number): Map<string, number> {
  const dir = `/proc/${pid}/task`;
  if (!fs.existsSync(dir)) return new Map();
  return new Map(
    fs.readdirSync(dir).map((t) => {
      const f = fs.readFileSync(`${dir}/${t}/stat`, "utf8").split(") ")[1].split(" ");
      return [t, ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS] as [string, number];
    }),
  );
}
const CLOCK_TICKS = 100;

/** Where a cell's CPU went, ms a request: the server's event loop, its busiest other thread (the ingest thread), its other threads, this client. */
const split = new Map<number, number[][]>();

async function ingest(api: string, size: number, round: number, pid: number): Promise<number> {
  const run = await call<{ id: string; writeKey?: string }>(`${api}/runs/import`, { body: { project: "bench-metric-ingest", name: `${size}-${round}` } });
  const headers: Record<string, string> = { "content-type": "application/json", ...(run.writeKey ? { "x-turnlens-write-key": run.writeKey } : {}) };
  const all = bodies(POINTS, size, `r${round}`);
  const url = new URL(`${api}/runs/${run.id}/metrics`);
  const [cpu0, client0] = [threadCpu(pid), process.cpuUsage()];
  const t0 = performance.now();
  for (const body of all) {
    const [status, text] = await post(url, headers, body);
    if (status !== 201) throw new Error(`POST metrics: HTTP ${status} ${text.slice(0, 300)}`);
  }
  const rate = POINTS / ((performance.now() - t0) / 1000);
  const client = process.cpuUsage(client0);
  const used = [...threadCpu(pid)].map(([t, ms]) => [t, ms - (cpu0.get(t) ?? 0)] as [string, number]);
  const main = used.find(([t]) => t === String(pid))?.[1] ?? 0;
  const others = used.filter(([t]) => t !== String(pid)).map(([, ms]) => ms);
  const busiest = Math.max(0, ...others);
  const perRequest = (ms: number) => ms / all.length;
  split.set(size, [
    ...(split.get(size) ?? []),
    [main, busiest, others.reduce((a, b) => a + b, 0) - busiest, (client.user + client.system) / 1000].map(perRequest),
  ]);
  return rate;
}

/** Raw inserts of the same rows: a transaction per `size` rows (all of them when null). */
function raw(file: string, size: number | null): number {
  const db = openSqlite(file);
  try {
    db.exec(`DELETE FROM "Metric"`);
    db.pragma("wal_checkpoint(TRUNCATE)");
    const insert = db.prepare(`INSERT INTO "Metric" ("seriesId","step","value","wallTime") VALUES (?,?,?,?)`);
    const stepsPer = (size ?? POINTS) / KEYS.length;
    // a request's rows in the order the server writes them: key by key, each key's steps in order
    const commit = db.transaction((s0: number) => {
      for (let k = 0; k < KEYS.length; k++) for (let s = s0; s < s0 + stepsPer; s++) insert.run(k + 1, s, value(s, k), WALL0 + s);
    });
    const t0 = performance.now();
    for (let s = 0; s < POINTS / KEYS.length; s += stepsPer) commit(s);
    return POINTS / ((performance.now() - t0) / 1000);
  } finally {
    db.close();
  }
}

/** raw() in a child process at the ingest thread's priority. */
function rawAtIngestNice(file: string, size: number | null): number {
  const args = [
    "--import",
    "tsx",
    fileURLToPath(import.meta.url),
    "--raw",
    file,
    "--size",
    String(size ?? 0),
    "--points",
    String(POINTS),
    "--nice",
    String(ingestNice()),
  ];
  return Number(execFileSync(process.execPath, args, { encoding: "utf8" }).trim());
}

if (opts.raw) {
  os.setPriority(Number(opts.nice));
  console.log(raw(opts.raw, Number(opts.size) || null));
  process.exit(0);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x: number) => Math.round(x).toLocaleString("en-US");

const work = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-bench-metric-ingest-"));
const store = await openStore("sqlite", path.join(work, "server"));
const limit = await openStore("sqlite", path.join(work, "raw"));
const server = await startServer(store.url, path.join(work, "server.log"));
try {
  // untimed: Next loads the route, the ingest thread starts, V8 compiles the ingest loops
  for (const size of SIZES) await ingest(server.api, size, -1, server.pid);
  split.clear();
  rawAtIngestNice(limit.file!, SIZES[0]);
  const rates = new Map<string, number[]>();
  const add = (k: string, x: number) => rates.set(k, [...(rates.get(k) ?? []), x]);
  for (let r = 0; r < ROUNDS; r++)
    for (const size of SIZES) {
      add(`ingest ${size}`, await ingest(server.api, size, r, server.pid));
      add(`raw ${size}`, rawAtIngestNice(limit.file!, size));
      if (size === SIZES[0]) add("raw all", rawAtIngestNice(limit.file!, null));
    }
  console.log(
    `bench:metric-ingest (${os.cpus().length} cores, load average ${loadAverage()}); ${fmt(POINTS)} points a cell, 10 keys, ` +
      `median of ${ROUNDS} rounds, points/s; ingest thread and raw inserts at nice ${ingestNice()}`,
  );
  console.log("| values a request | HTTP ingest | raw SQLite, a commit per request's rows | ratio | raw SQLite, one transaction | ratio |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  const rawAll = median(rates.get("raw all")!);
  for (const size of SIZES) {
    const [i, w] = [median(rates.get(`ingest ${size}`)!), median(rates.get(`raw ${size}`)!)];
    console.log(`| ${fmt(size)} | ${fmt(i)} | ${fmt(w)} | ${((100 * i) / w).toFixed(0)} % | ${fmt(rawAll)} | ${((100 * i) / rawAll).toFixed(0)} % |`);
  }
  console.log(`rounds: ${[...rates].map(([k, xs]) => `${k} ${xs.map(fmt).join(" / ")}`).join("; ")}`);
  for (const [size, cells] of split) {
    const m = (i: number) => median(cells.map((c) => c[i])).toFixed(2);
    console.log(
      `CPU a request of ${fmt(size)} values, ms (median of the rounds; /proc, 10 ms ticks): server event loop ${m(0)}, ingest thread ${m(1)}, ` +
        `other server threads ${m(2)}, this client ${m(3)}`,
    );
  }
} finally {
  agent.destroy();
  await server.stop();
  await store.stop();
  await limit.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
