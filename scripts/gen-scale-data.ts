// npm run gen:scale -- --store sqlite|postgresql [--turns 10000000] [--requests 300] [--dir DIR]
// The big-table figures of docs/scale.md: fills a fresh database of the store with N turns, then
// times the metric series and turn page endpoints through the production server (p50/p99 over
// --requests sequential requests each, at random runs and offsets), and prints bytes per turn.
//
// Rows: runs of 977 steps (~10^6 turns) of 1,024 turns each (16 groups x 8 trajectories x 8
// turns), the rows writeRolloutStep stores for the step bench:load posts (stepRows in
// scripts/bench-store.ts; test/platform/scale-rows.test.ts holds them equal), UUIDv7 ids from
// lib/db/ids.ts, seq from 0 per run. SQLite: better-sqlite3,
// one transaction per 50 steps. PostgreSQL: COPY through pg (pg-copy-streams). Runs and metrics
// (a chart of 10^6 points of one key, and 10 keys per step of every turn run) are written by the
// app's own createRun/writeMetrics into a SQLite file first, then copied row for row.
// When the server refuses the store (PostgreSQL before lib/db's port), the endpoints' queries are
// timed as raw SQL through pg instead, and the output says so.
import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { orderedId } from "../lib/db/ids";
import {
  call,
  loadAverage,
  openStore,
  parseArgs,
  parseStore,
  percentile,
  startServer,
  stepBody,
  stepRows,
  GROUP_COLS,
  STEP_COLS,
  TRAJECTORY_COLS,
  STEP_TURNS,
  TURNS_PER_STEP as PER_STEP,
  type Cell,
  type Store,
} from "./bench-store";

const opts = parseArgs(process.argv.slice(2), { store: "postgresql", turns: "10000000", requests: "300", dir: "" });
const kind = parseStore(opts.store);
const wanted = Number(opts.turns);
const requests = Number(opts.requests);
if (!Number.isInteger(wanted) || wanted < 1024) throw new Error(`--turns must be an integer >= 1024 (got ${opts.turns})`);
if (!Number.isInteger(requests) || requests < 10) throw new Error(`--requests must be an integer >= 10 (got ${opts.requests})`);

const STEPS_PER_RUN = 977; // 1,000,448 turns
const CHUNK_STEPS = 50;
const totalSteps = Math.ceil(wanted / PER_STEP);
const nRuns = Math.ceil(totalSteps / STEPS_PER_RUN);
const CHART_POINTS = 1_000_000;
const TEMPLATE = stepBody(0); // every step has the same content (bench:load's step), new ids
const KEYS = Array.from({ length: 10 }, (_, i) => `train/k${i}`);

interface Sink {
  /** Writes rows of tables in the given order (parents first), as one unit. */
  write(tables: [table: string, cols: string[], rows: Cell[][]][]): Promise<void>;
  close(): Promise<void>;
}

function sqliteSink(file: string): Sink {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF"); // a bulk load: no fsync per transaction (the rows are the same)
  const stmts = new Map<string, Database.Statement>();
  const ROWS = 50; // rows a statement, as writeRolloutStep inserts turns
  const stmt = (table: string, cols: string[], n: number) => {
    const k = `${table}/${n}`;
    let s = stmts.get(k);
    if (!s) {
      const one = `(${cols.map(() => "?").join(",")})`;
      s = db.prepare(`INSERT INTO "${table}" (${cols.map((c) => `"${c}"`).join(",")}) VALUES ${Array(n).fill(one).join(",")}`);
      stmts.set(k, s);
    }
    return s;
  };
  const conv = (v: Cell) => (typeof v === "boolean" ? (v ? 1 : 0) : v);
  const tx = db.transaction((tables: [string, string[], Cell[][]][]) => {
    for (const [table, cols, rows] of tables) {
      let i = 0;
      for (; i + ROWS <= rows.length; i += ROWS)
        stmt(table, cols, ROWS).run(
          rows
            .slice(i, i + ROWS)
            .flat()
            .map(conv),
        );
      for (; i < rows.length; i++) stmt(table, cols, 1).run(rows[i].map(conv));
    }
  });
  return { write: async (t) => void tx(t), close: async () => void db.close() };
}

/** COPY text format: backslash escapes, \N for NULL, t/f booleans. */
const copyCell = (v: Cell) =>
  v === null
    ? "\\N"
    : v instanceof Uint8Array
      ? `\\\\x${Buffer.from(v).toString("hex")}`
      : typeof v === "boolean"
        ? v
          ? "t"
          : "f"
        : typeof v === "number"
          ? String(v)
          : v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");

async function pgSink(url: string): Promise<Sink & { client: pg.Client }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const copy = (table: string, cols: string[], rows: Cell[][]) =>
    new Promise<void>((resolve, reject) => {
      const stream = client.query(copyFrom(`COPY "${table}" (${cols.map((c) => `"${c}"`).join(",")}) FROM STDIN`));
      stream.on("error", reject);
      stream.on("finish", resolve);
      let i = 0;
      const pump = () => {
        while (i < rows.length) {
          let chunk = "";
          for (const end = Math.min(rows.length, i + 2000); i < end; i++) chunk += rows[i].map(copyCell).join("\t") + "\n";
          if (!stream.write(chunk)) return void stream.once("drain", pump);
        }
        stream.end();
      };
      pump();
    });
  return {
    client,
    async write(tables) {
      await client.query("BEGIN");
      for (const [table, cols, rows] of tables) await copy(table, cols, rows);
      await client.query("COMMIT");
    },
    close: () => client.end(),
  };
}

// ---- runs and metrics through the app's own code, in a SQLite file
const startedAt = new Date().toISOString();
const loadStart = loadAverage();
const store: Store = await openStore(kind, kind === "sqlite" && opts.dir ? opts.dir : undefined);
const scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-gen-"));
const appFile = store.file ?? path.join(scratchDir, "app.db");
if (!store.file)
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: { ...process.env, DATABASE_URL: `file:${appFile}` } });
process.env.DATABASE_URL = `file:${appFile}`;
const { createRun } = await import("../lib/db/runs");
const { writeMetrics } = await import("../lib/db/metrics");
const newRun = (name: string) => createRun({ project: "scale", name, kind: "imported", jobKind: null, config: { lr: 1e-5 }, status: "running" }).runId;
const chartRun = newRun("chart-1e6");
for (let s0 = 0; s0 < CHART_POINTS; s0 += 10_000)
  writeMetrics(
    chartRun,
    Array.from({ length: 10_000 }, (_, i) => ({
      key: "train/reward",
      step: s0 + i,
      value: Math.sin((s0 + i) / 10_000) + (((s0 + i) * 7919) % 1000) / 5000,
      wallTime: 1.7e9 + s0 + i,
    })),
  );
const turnRuns = Array.from({ length: nRuns }, (_, r) => newRun(`turns-${r}`));
for (const run of turnRuns)
  writeMetrics(run, Array.from({ length: STEPS_PER_RUN }, (_, s) => KEYS.map((key, k) => ({ key, step: s, value: k + s / 1000, wallTime: 1.7e9 + s }))).flat());

let sink: Sink;
let pgClient: pg.Client | null = null;
if (kind === "postgresql") {
  const s = await pgSink(store.url);
  pgClient = s.client;
  sink = s;
  // Project, Run and the metric tables, row for row from the app's SQLite file.
  const app = new Database(appFile, { readonly: true });
  for (const table of ["Project", "Run", "Metric", "MetricRollup", "MetricSeries"]) {
    const cols = (app.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name);
    const rows = app.prepare(`SELECT * FROM "${table}"`).raw().all() as Cell[][];
    await sink.write([[table, cols, rows]]);
  }
  app.close();
  // the ids were copied as they are: move the sequence past them, as inserts through it would have
  await pgClient.query(`SELECT setval(pg_get_serial_sequence('"MetricSeries"', 'id'), (SELECT MAX("id") FROM "MetricSeries"))`);
} else {
  sink = sqliteSink(appFile);
}
const bytesBefore = await storeBytes();

// ---- the turns
const t0 = performance.now();
let written = 0;
let step = 0;
for (let r = 0; r < nRuns; r++) {
  for (let s0 = 0; s0 < STEPS_PER_RUN && step < totalSteps; s0 += CHUNK_STEPS) {
    const all = { steps: [] as Cell[][], groups: [] as Cell[][], trajectories: [] as Cell[][] };
    const createdAt = new Date().toISOString();
    for (let s = s0; s < Math.min(s0 + CHUNK_STEPS, STEPS_PER_RUN) && step < totalSteps; s++, step++) {
      const rows = stepRows(turnRuns[r], { ...TEMPLATE, step: s }, s * PER_STEP, kind === "sqlite" ? createdAt.replace("Z", "+00:00") : createdAt, orderedId);
      for (const k of ["steps", "groups", "trajectories"] as const) for (const row of rows[k]) all[k].push(row);
    }
    await sink.write([
      ["RolloutStep", STEP_COLS, all.steps],
      ["RolloutGroup", GROUP_COLS, all.groups],
      ["Trajectory", TRAJECTORY_COLS, all.trajectories],
    ]);
    written += all.trajectories.reduce((n, t) => n + (t[TRAJECTORY_COLS.indexOf("length")] as number), 0);
  }
  const secs = (performance.now() - t0) / 1000;
  console.error(
    `gen: ${written.toLocaleString()} turns in ${secs.toFixed(0)} s (${Math.round(written / secs).toLocaleString()} turns/s), load ${loadAverage()}`,
  );
}
const loadSecs = (performance.now() - t0) / 1000;
if (pgClient) {
  const a = performance.now();
  await pgClient.query("VACUUM ANALYZE"); // what autovacuum would do after a bulk load; the planner needs the row counts
  console.error(`gen: VACUUM ANALYZE ${((performance.now() - a) / 1000).toFixed(0)} s`);
}
await sink.close();
const bytesAfter = await storeBytes();

async function storeBytes(): Promise<number> {
  if (kind === "sqlite") {
    const db = new Database(appFile);
    db.pragma("wal_checkpoint(TRUNCATE)");
    const n = (db.pragma("page_count", { simple: true }) as number) * (db.pragma("page_size", { simple: true }) as number);
    db.close();
    return n;
  }
  const c = new pg.Client({ connectionString: store.url });
  await c.connect();
  const n = Number((await c.query(`SELECT pg_database_size(current_database()) AS n`)).rows[0].n);
  await c.end();
  return n;
}

// ---- timings
const rand = (n: number) => Math.floor(Math.random() * n);
const turnsIn = (r: number) => Math.min(STEPS_PER_RUN, totalSteps - r * STEPS_PER_RUN) * PER_STEP;
const rows: string[] = [];
const row = (name: string, ms: number[]) => rows.push(`| ${name} | ${ms.length} | ${percentile(ms, 50).toFixed(1)} | ${percentile(ms, 99).toFixed(1)} |`);
let how: string;
let server: Awaited<ReturnType<typeof startServer>> | null = null;
try {
  server = await startServer(store.url, "/tmp/turnlens-gen-scale-server.log");
} catch (e) {
  if (kind !== "postgresql") throw e;
  console.error(
    `gen: the server did not start on PostgreSQL (${(e as Error).message.split("\n").slice(0, 3).join(" ")}); timing the endpoints' SQL through pg instead`,
  );
}
try {
  if (server) {
    how = "through the production server (HTTP, one request at a time)";
    const api = server.api;
    const time = async (url: string) => {
      const t = performance.now();
      const res = await fetch(url);
      if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      return performance.now() - t;
    };
    const timeAll = async (make: () => string) => {
      for (let i = 0; i < 5; i++) await time(make()); // warm-up: Next loads a route's code on first use
      const ms: number[] = [];
      for (let i = 0; i < requests; i++) ms.push(await time(make()));
      return ms;
    };
    const probe = await call<{ stride: number; steps: number[] }>(`${api}/runs/${chartRun}/metrics/series?key=train/reward&maxPoints=1500`);
    row(
      `metric series, full fetch (10^6 points, ${probe.steps.length} returned, stride ${probe.stride})`,
      await timeAll(() => `${api}/runs/${chartRun}/metrics/series?key=train/reward&maxPoints=1500`),
    );
    row(
      "metric series, live poll at a random step (10^6 points)",
      await timeAll(() => `${api}/runs/${chartRun}/metrics/series?key=train/reward&maxPoints=1500&after=${rand(CHART_POINTS)}&stride=${probe.stride}`),
    );
    row(
      "metric series, a turn run's key (977 points)",
      await timeAll(() => `${api}/runs/${turnRuns[rand(nRuns)]}/metrics/series?key=${encodeURIComponent(KEYS[rand(KEYS.length)])}&maxPoints=1500`),
    );
    row(
      "turn page (100 turns, random run and offset)",
      await timeAll(() => {
        const r = rand(nRuns);
        return `${api}/runs/${turnRuns[r]}/turns?limit=100&after=${rand(turnsIn(r) - 100) - 1}`;
      }),
    );
  } else {
    how =
      "as raw SQL through pg (the server does not serve PostgreSQL yet): the queries lib/db runs for these endpoints, in PostgreSQL's dialect, without HTTP or JSON";
    const c = new pg.Client({ connectionString: store.url });
    await c.connect();
    const timeAll = async (q: () => Promise<unknown>) => {
      for (let i = 0; i < 5; i++) await q();
      const ms: number[] = [];
      for (let i = 0; i < requests; i++) {
        const t = performance.now();
        await q();
        ms.push(performance.now() - t);
      }
      return ms;
    };
    // readSeries on 10^6 points, maxPoints 1500: stride 2048 over level-256 rollups (ratio 8); the
    // bucket's min and max rows (SQLite's bare-column MIN/MAX is DISTINCT ON here), then wall times.
    const series = async (after: number) => {
      const meta = await c.query(`SELECT "id","count","firstStep","lastStep","lastValue" FROM "MetricSeries" WHERE "runId" = $1 AND "key" = $2`, [
        chartRun,
        "train/reward",
      ]);
      const id = meta.rows[0].id as number;
      const from = Math.floor(after / 2048) * 8;
      const pts: number[] = [];
      for (const [agg, step, value, dir] of [
        ["MIN", "minStep", "minValue", "ASC"],
        ["MAX", "maxStep", "maxValue", "DESC"],
      ]) {
        void agg;
        const r = await c.query({
          text: `SELECT DISTINCT ON ("bucket" / 8) "${step}", "${value}" FROM "MetricRollup" WHERE "seriesId" = $1 AND "level" = 256 AND "bucket" >= $2 ORDER BY "bucket" / 8, "${value}" ${dir}`,
          values: [id, from],
          rowMode: "array",
        });
        for (const x of r.rows) pts.push(x[0]);
      }
      await c.query(`SELECT "step","wallTime" FROM "Metric" WHERE "seriesId" = $1 AND "step" = ANY($2::int[])`, [id, pts]);
    };
    row("metric series SQL, full fetch (10^6 points, stride 2048)", await timeAll(() => series(0)));
    row("metric series SQL, live poll at a random step (10^6 points)", await timeAll(() => series(rand(CHART_POINTS))));
    row(
      "turn page SQL (100 turns, random run and offset)",
      await timeAll(async () => {
        const r = rand(nRuns);
        // lib/db/rollouts.ts turnsPage's two queries: the trajectories' spans, then the packed columns of those the page needs
        const after = rand(turnsIn(r) - 100) - 1;
        const spans = await c.query(
          `SELECT "id","firstSeq","length" FROM "Trajectory" WHERE "runId" = $1 AND "firstSeq" >=
           COALESCE((SELECT MAX("firstSeq") FROM "Trajectory" WHERE "runId" = $1 AND "firstSeq" <= $2), 0) ORDER BY "firstSeq" LIMIT 101`,
          [turnRuns[r], after + 1],
        );
        const ids = spans.rows
          .filter((x) => x.firstSeq + x.length - 1 > after)
          .slice(0, Math.ceil(100 / STEP_TURNS) + 1)
          .map((x) => x.id);
        return c.query(`SELECT "id","firstSeq","length","turnData","turnTexts","turnTokens" FROM "Trajectory" WHERE "id" = ANY($1) ORDER BY "firstSeq"`, [ids]);
      }),
    );
    await c.end();
  }

  console.log(`\ngen:scale on ${kind}, ${startedAt}; load average at start ${loadStart}, at end ${loadAverage()}`);
  console.log(
    `turns: ${written.toLocaleString()} in ${nRuns} runs, stored in ${loadSecs.toFixed(0)} s (${Math.round(written / loadSecs).toLocaleString()} turns/s)`,
  );
  console.log(
    `bytes: ${(bytesAfter / 2 ** 30).toFixed(2)} GiB in all; the turns added ${(bytesAfter - bytesBefore).toLocaleString()} bytes = ${((bytesAfter - bytesBefore) / written).toFixed(0)} bytes per turn (steps, groups, trajectories and indexes included)`,
  );
  if (kind === "postgresql") {
    const c = new pg.Client({ connectionString: store.url });
    await c.connect();
    const sizes = await c.query(
      `SELECT relname, pg_total_relation_size(oid) AS n FROM pg_class WHERE relname IN ('Trajectory','RolloutGroup','RolloutStep','Metric','MetricRollup') ORDER BY 2 DESC`,
    );
    console.log(`tables (with indexes and TOAST): ${sizes.rows.map((x) => `${x.relname} ${(Number(x.n) / 2 ** 20).toFixed(0)} MiB`).join(", ")}`);
    await c.end();
  }
  console.log(`timed ${how}:\n`);
  console.log("| request | n | p50 ms | p99 ms |");
  console.log("| --- | --- | --- | --- |");
  for (const r of rows) console.log(r);
} finally {
  await server?.stop();
  await store.stop();
  fs.rmSync(scratchDir, { recursive: true, force: true });
}
