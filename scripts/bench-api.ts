// npm run bench:api — latency of the read endpoints on big runs, and the write path's ingest rate.
//   * metric series endpoint, a run with 10^6 points of one metric (target p95 < 100 ms)
//   * one page of turns, a run with 10^6 turns (target < 50 ms)
//   * ingest rate of the write path in turns per second (target >= 50,000/s on SQLite)
// Uses its own SQLite file (data/bench-api.db) and a production build (`next build` first if missing).
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";

const DB = "data/bench-api.db";
for (const f of [DB, DB + "-wal", DB + "-shm"]) fs.rmSync(f, { force: true });
process.env.DATABASE_URL = `file:./${DB}`;
execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe" });

const { createRun } = await import("../lib/db/runs");
const { writeMetrics } = await import("../lib/db/metric-writes");
const { writeRolloutStep } = await import("../lib/db/rollouts");
type Step = import("../lib/schemas/rollouts").RolloutStepInput;

const N_POINTS = 1_000_000;
const N_TURNS = 1_000_000;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

// ---- write path: metrics
const metricRun = createRun({ project: "bench", name: "metrics-1e6", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
let t0 = performance.now();
for (let start = 0; start < N_POINTS; start += 10_000) {
  const pts = [];
  for (let s = start; s < start + 10_000; s++)
    pts.push({ key: "train/reward", step: s, value: Math.sin(s / 10_000) + ((s * 7919) % 1000) / 5000, wallTime: 1.7e9 + s });
  writeMetrics(metricRun, pts);
}
const metricSecs = (performance.now() - t0) / 1000;

// ---- write path: turns (realistic text: a 6x6 Sokoban-like grid and a short action)
const turnsRun = createRun({ project: "bench", name: "turns-1e6", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
const grid = "######\n#_P__#\n#_X__#\n#__O_#\n#____#\n######";
const TURNS_PER_STEP = 10_000; // 125 groups x 8 trajectories x 10 turns
t0 = performance.now();
for (let step = 0; step < N_TURNS / TURNS_PER_STEP; step++) {
  const batch: Step = {
    step,
    estimator: "gigpo",
    groups: Array.from({ length: 125 }, (_, g) => ({
      uid: `g${g}`,
      envId: "sokoban",
      taskSeed: g,
      trajectories: Array.from({ length: 8 }, (_, t) => ({
        success: t % 3 === 0,
        truncated: false,
        turns: Array.from({ length: 10 }, (_, i) => ({
          observation: `Turn ${i}. You are P; push boxes X onto targets O.\n${grid}`,
          action: ["up", "down", "left", "right"][(g + t + i) % 4],
          reward: i === 9 && t % 3 === 0 ? 10 : -0.1,
          valid: true,
          done: i === 9,
          anchor: `s${(g * 7 + i) % 40}`,
          advantage: ((t % 3) - 1) * 0.5,
        })),
      })),
    })),
  };
  writeRolloutStep(turnsRun, batch);
}
const turnSecs = (performance.now() - t0) / 1000;

// ---- read path over HTTP against the production server
if (!fs.existsSync(".next/BUILD_ID"))
  execFileSync("node_modules/.bin/next", ["build"], { stdio: "inherit", env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });
const PORT = 3190;
const server = spawn("node_modules/.bin/next", ["start", "-H", "127.0.0.1", "-p", String(PORT)], {
  env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
  stdio: "ignore",
});
const base = `http://127.0.0.1:${PORT}/api/v1`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/projects`)).ok) break;
  } catch {
    /* not up yet */
  }
  if (i > 300) throw new Error("server did not start");
  await new Promise((r) => setTimeout(r, 200));
}

async function timeGets(urls: string[]): Promise<number[]> {
  const ms: number[] = [];
  for (const u of urls) {
    const t = performance.now();
    const res = await fetch(u);
    if (!res.ok) throw new Error(`${u}: HTTP ${res.status}`);
    await res.arrayBuffer();
    ms.push(performance.now() - t);
  }
  return ms;
}

try {
  const warm = (urls: string[]) => timeGets(urls.slice(0, 5));
  // A chart's first load (full series) and live polls by cursor, as the run page issues them.
  const seriesUrls = Array.from({ length: 100 }, () => `${base}/runs/${metricRun}/metrics/series?key=train/reward&maxPoints=1500`);
  const liveUrls = Array.from(
    { length: 100 },
    (_, i) => `${base}/runs/${metricRun}/metrics/series?key=train/reward&maxPoints=1500&after=${999_000 + i * 10}&stride=2048`,
  );
  const turnUrls = Array.from({ length: 200 }, (_, i) => `${base}/runs/${turnsRun}/turns?limit=100&after=${Math.floor(((i * 7919) % 1000) * 999)}`);
  await warm(seriesUrls);
  await warm(turnUrls);
  const series = await timeGets(seriesUrls);
  const live = await timeGets(liveUrls);
  const turns = await timeGets(turnUrls);
  const check = await (await fetch(seriesUrls[0])).json();
  const row = (name: string, xs: number[], target: string) =>
    console.log(`| ${name} | ${xs.length} | ${pct(xs, 50).toFixed(1)} | ${pct(xs, 95).toFixed(1)} | ${target} |`);
  console.log(`\nTurnLens API benchmark (SQLite, ${new Date().toISOString()})\n`);
  console.log(`| endpoint | requests | p50 ms | p95 ms | target |`);
  console.log(`| --- | --- | --- | --- | --- |`);
  row(`metric series, 10^6 points (full fetch, ${check.steps.length} points, stride ${check.stride})`, series, "p95 < 100 ms");
  row("metric series, 10^6 points (live poll by cursor)", live, "p95 < 100 ms");
  row("one page of 100 turns, run with 10^6 turns", turns, "< 50 ms");
  console.log(`\nwrite path (lib/db, fenced transactions):`);
  console.log(`  metrics: ${N_POINTS.toLocaleString()} points in ${metricSecs.toFixed(2)} s = ${Math.round(N_POINTS / metricSecs).toLocaleString()} points/s`);
  console.log(
    `  turns:   ${N_TURNS.toLocaleString()} turns in ${turnSecs.toFixed(2)} s = ${Math.round(N_TURNS / turnSecs).toLocaleString()} turns/s (target >= 50,000/s)`,
  );
  console.log(`  database file: ${(fs.statSync(DB).size / 2 ** 20).toFixed(0)} MiB`);
} finally {
  server.kill("SIGTERM");
}
