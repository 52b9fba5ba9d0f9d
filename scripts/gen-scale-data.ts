// npm run gen:scale -- --store sqlite|postgresql [--turns 10000000] [--requests 300] [--dir DIR]
// The big-table figures of docs/scale.md: fills a fresh database of the store with N turns, then
// times the metric series and turn page endpoints through the production server (p50/p99 over
// --requests sequential requests each, at random runs and offsets), and prints bytes per turn.
// --requests 0 loads and measures bytes only, without the server.
//
// Rows: runs of 977 steps (~10^6 turns) of 1,024 turns each (16 groups x 8 trajectories x 8
// turns), the rows writeRolloutStep stores for the step bench:load posts (stepRows in
// scripts/bench-store.ts; test/platform/scale-rows.test.ts holds them equal), UUIDv7 ids from
// lib/db/ids.ts, seq from 0 per run, loaded by lib/db/bulk-load.ts one transaction per 50 steps
// (SQLite: multi-row INSERTs; PostgreSQL: COPY). Runs and metrics (a chart of 10^6 points of one
// key, and 10 keys per step of every turn run) are written by the app's own createRun/writeMetrics.
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
  TURNS_PER_STEP as PER_STEP,
  type Cell,
  type Store,
} from "./bench-store";

const opts = parseArgs(process.argv.slice(2), { store: "postgresql", turns: "10000000", requests: "300", dir: "" });
const kind = parseStore(opts.store);
const wanted = Number(opts.turns);
const requests = Number(opts.requests);
if (!Number.isInteger(wanted) || wanted < 1024) throw new Error(`--turns must be an integer >= 1024 (got ${opts.turns})`);
if (!Number.isInteger(requests) || (requests !== 0 && requests < 10)) throw new Error(`--requests must be 0 or an integer >= 10 (got ${opts.requests})`);

const STEPS_PER_RUN = 977; // 1,000,448 turns
const CHUNK_STEPS = 50;
const totalSteps = Math.ceil(wanted / PER_STEP);
const nRuns = Math.ceil(totalSteps / STEPS_PER_RUN);
const CHART_POINTS = 1_000_000;
const TEMPLATE = stepBody(0); // every step has the same content (bench:load's step), new ids
const KEYS = Array.from({ length: 10 }, (_, i) => `train/k${i}`);
const TABLES = ["Trajectory", "RolloutGroup", "RolloutStep", "Metric", "MetricRollup"];

// ---- runs and metrics through the app's own code
const startedAt = new Date().toISOString();
const loadStart = loadAverage();
const store: Store = await openStore(kind, kind === "sqlite" && opts.dir ? opts.dir : undefined);
process.env.DATABASE_URL = store.url;
const { createRun } = await import("../lib/db/runs");
const { writeMetrics } = await import("../lib/db/metric-writes");
const { dbDateTime, getRawDb } = await import("../lib/db/raw");
const { databaseBytes, openBulkSink, settleAfterBulkLoad, tableBytes } = await import("../lib/db/bulk-load");
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

const sink = await openBulkSink(store.url);
const bytesBefore = databaseBytes(getRawDb());

// ---- the turns
const t0 = performance.now();
let written = 0;
let step = 0;
for (let r = 0; r < nRuns; r++) {
  for (let s0 = 0; s0 < STEPS_PER_RUN && step < totalSteps; s0 += CHUNK_STEPS) {
    const all = { steps: [] as Cell[][], groups: [] as Cell[][], trajectories: [] as Cell[][] };
    const createdAt = dbDateTime();
    for (let s = s0; s < Math.min(s0 + CHUNK_STEPS, STEPS_PER_RUN) && step < totalSteps; s++, step++) {
      const rows = stepRows(turnRuns[r], { ...TEMPLATE, step: s }, s * PER_STEP, createdAt, orderedId);
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
await sink.close();
{
  const a = performance.now();
  settleAfterBulkLoad(getRawDb()); // what PostgreSQL's autovacuum would do after a bulk load: the planner needs the row counts
  console.error(`gen: settled after the load in ${((performance.now() - a) / 1000).toFixed(0)} s`);
}
const bytesAfter = databaseBytes(getRawDb());
const sizes = tableBytes(TABLES, getRawDb());
getRawDb().close(); // the server opens its own; a SQLite connection left open would hold the WAL

// ---- timings
const rand = (n: number) => Math.floor(Math.random() * n);
const turnsIn = (r: number) => Math.min(STEPS_PER_RUN, totalSteps - r * STEPS_PER_RUN) * PER_STEP;
const rows: string[] = [];
const row = (name: string, ms: number[]) => rows.push(`| ${name} | ${ms.length} | ${percentile(ms, 50).toFixed(1)} | ${percentile(ms, 99).toFixed(1)} |`);
// --requests 0: the load and the bytes only, no server (a check of the generator itself)
const server = requests > 0 ? await startServer(store.url, "/tmp/turnlens-gen-scale-server.log") : null;
try {
  if (server) {
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
  }

  console.log(`\ngen:scale on ${kind}, ${startedAt}; load average at start ${loadStart}, at end ${loadAverage()}`);
  console.log(
    `turns: ${written.toLocaleString()} in ${nRuns} runs, stored in ${loadSecs.toFixed(0)} s (${Math.round(written / loadSecs).toLocaleString()} turns/s)`,
  );
  console.log(
    `bytes: ${(bytesAfter / 2 ** 30).toFixed(2)} GiB in all; the turns added ${(bytesAfter - bytesBefore).toLocaleString()} bytes = ${((bytesAfter - bytesBefore) / written).toFixed(0)} bytes per turn (steps, groups, trajectories and indexes included)`,
  );
  console.log(
    `tables (with indexes${kind === "postgresql" ? " and TOAST" : ""}): ${Object.entries(sizes)
      .sort((a, b) => b[1] - a[1])
      .map(([t, n]) => `${t} ${(n / 2 ** 20).toFixed(0)} MiB`)
      .join(", ")}`,
  );
  if (server) {
    console.log("timed through the production server (HTTP, one request at a time):\n");
    console.log("| request | n | p50 ms | p99 ms |");
    console.log("| --- | --- | --- | --- |");
    for (const r of rows) console.log(r);
  }
} finally {
  await server?.stop();
  await store.stop();
}
