// Alerts and failure clusters at the bench:realistic scale (150 steps x 6,400 turns, ALFWorld-like
// texts, scripts/realistic-workload.ts, written with lib/db as `bench:realistic --direct` does, no
// response tokens), with 150 steps of verl-named metrics whose entropy collapses at step 100:
//
// - in-process: the default rules' evaluation of the whole run from nothing read (the worst case,
//   a server that starts on a run no rule has read), and the incremental one after one more
//   metric batch and one more step (what ingest pays after it answered);
// - through the production server (`next build` first): the cold latency (first request of that
//   URL in a fresh server process, after /api/v1/projects has loaded Next and opened the database)
//   and the warm one (median of the next 5) of the new routes and of the two pages that show alerts;
// - ingest with the default rules on and off (ingestOnOff).
//
//   node_modules/.bin/tsx scripts/bench-alerts.ts [--steps 150] [--db FILE] [--reuse]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { realisticStep } from "./realistic-workload";
import { percentile, startServer } from "./bench-store";

const args = process.argv.slice(2);
const opt = (k: string) => {
  const i = args.indexOf(`--${k}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const STEPS = Number(opt("steps") ?? 150);
const DB = path.resolve(opt("db") ?? `data/bench-alerts-${STEPS}.db`);
const META = DB.replace(/\.db$/, "") + ".json";
process.env.DATABASE_URL = `file:${DB}`;

const metrics = (step: number) => ({
  "actor/entropy": step >= 100 ? 0.1 : 1 - step * 0.001,
  "actor/pg_clipfrac": 0.05,
  "actor/kl_loss": 0.002,
  "response_length/clip_ratio": 0.01,
});

async function seed(): Promise<{ runId: string; projectId: string }> {
  for (const f of [DB, DB + "-wal", DB + "-shm", META]) fs.rmSync(f, { force: true });
  fs.mkdirSync(path.dirname(DB), { recursive: true });
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: process.env });
  const { createRun, getRun } = await import("../lib/db/runs");
  const { writeRolloutStep } = await import("../lib/db/rollouts");
  const { summarizeStepInput } = await import("../lib/schemas/step-summary");
  const { ingestMetrics } = await import("../lib/ingest/batches");
  const runId = createRun({
    project: "bench",
    name: `alfworld-${STEPS}x6400`,
    kind: "imported",
    jobKind: null,
    config: {},
    envId: "alfworld",
    estimator: "gigpo",
    status: "running",
  }).runId;
  const t0 = performance.now();
  // the last step is left for the incremental measurement
  for (let step = 0; step < STEPS - 1; step++) {
    const input = await realisticStep(step, STEPS, 0);
    writeRolloutStep(runId, input, null, undefined, { summary: summarizeStepInput(input) });
    ingestMetrics(runId, { points: [{ step, values: metrics(step) }] });
    if (step % 10 === 9) console.log(`  wrote ${step + 1}/${STEPS - 1} steps, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  const meta = { runId, projectId: getRun(runId).projectId };
  fs.writeFileSync(META, JSON.stringify(meta));
  return meta;
}

async function inProcess(runId: string): Promise<void> {
  const { evaluateRunAlerts, forgetRunAlerts, listAlerts } = await import("../lib/db/alerts");
  const { getRawDb } = await import("../lib/db/raw");
  const { ingestMetrics, ingestStep } = await import("../lib/ingest/batches");
  const { finishOneDeferred } = await import("../lib/ingest/deferred");
  const db = getRawDb();
  forgetRunAlerts(runId, db);
  let t = performance.now();
  evaluateRunAlerts(runId, db);
  console.log(`default rules over ${STEPS - 1} steps from nothing read: ${(performance.now() - t).toFixed(1)} ms`);
  console.log(
    `  alerts: ${
      listAlerts({ runId, limit: 50 })
        .map((a) => `${a.ruleId}@${a.step}`)
        .join(", ") || "none"
    }`,
  );
  const step = STEPS - 1;
  ingestMetrics(runId, { points: [{ step, values: metrics(step) }] }, db);
  t = performance.now();
  evaluateRunAlerts(runId, db);
  console.log(`incremental, after one metric batch: ${(performance.now() - t).toFixed(2)} ms`);
  ingestStep(runId, await realisticStep(step, STEPS, 0), db);
  finishOneDeferred(db); // its summary (what the step rules read) and index
  t = performance.now();
  evaluateRunAlerts(runId, db);
  console.log(`incremental, after one step's summary: ${(performance.now() - t).toFixed(2)} ms`);
}

/**
 * Ingest with the default rules on and off: two runs (projects "bench-on", default rules, and
 * "bench-off", no rules) get the same 10 steps and metric batches through the server's ingest entry
 * (lib/ingest/thread.ts, JSON bytes in), taken in turn so that the machine's load falls on both;
 * per step the time to the answer and the deferred work after it (summary, index, alert rules).
 */
async function ingestOnOff(): Promise<void> {
  const { createRun, getRun } = await import("../lib/db/runs");
  const { writeAlertConfig } = await import("../lib/db/alerts");
  const { getRawDb } = await import("../lib/db/raw");
  const { handleIngest } = await import("../lib/ingest/thread");
  const { checkOneRunAlerts, finishOneDeferred } = await import("../lib/ingest/deferred");
  const db = getRawDb();
  const run = (project: string) =>
    createRun({ project, name: "ingest", kind: "imported", jobKind: null, config: {}, envId: "alfworld", estimator: "gigpo", status: "running" }).runId;
  const on = run("bench-on");
  const off = run("bench-off");
  writeAlertConfig(getRun(off).projectId, { rules: [], webhookUrl: null });
  const times = { on: { answer: [] as number[], after: [] as number[] }, off: { answer: [] as number[], after: [] as number[] } };
  let id = 0;
  for (let step = 0; step < 10; step++) {
    const bytes = new TextEncoder().encode(JSON.stringify(await realisticStep(step, 10, 0)));
    const metricBytes = new TextEncoder().encode(JSON.stringify({ points: [{ step, values: metrics(step) }] }));
    for (const [which, runId] of (step % 2
      ? [
          ["off", off],
          ["on", on],
        ]
      : [
          ["on", on],
          ["off", off],
        ]) as ["on" | "off", string][]) {
      let t = performance.now();
      const a = handleIngest({ id: ++id, kind: "steps", runId, bytes, databaseUrl: process.env.DATABASE_URL! }, db);
      const b = handleIngest({ id: ++id, kind: "metrics", runId, bytes: metricBytes, databaseUrl: process.env.DATABASE_URL! }, db);
      if (!a.ok || !b.ok) throw new Error(JSON.stringify(a.ok ? b : a));
      times[which].answer.push(performance.now() - t);
      t = performance.now();
      while (finishOneDeferred(db) || checkOneRunAlerts(db));
      times[which].after.push(performance.now() - t);
    }
  }
  for (const which of ["on", "off"] as const)
    console.log(
      `ingest, default rules ${which}: step + metric batch answered in ${percentile(times[which].answer, 50).toFixed(1)} ms, deferred work after ${percentile(times[which].after, 50).toFixed(1)} ms (medians of 10 steps of 6,400 turns)`,
    );
}

async function time(url: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return performance.now() - t;
}

async function main() {
  const reuse = args.includes("--reuse") && fs.existsSync(META);
  const { runId, projectId } = reuse ? (JSON.parse(fs.readFileSync(META, "utf8")) as { runId: string; projectId: string }) : await seed();
  if (!reuse) {
    await inProcess(runId);
    await ingestOnOff();
  }
  const urls: [string, string][] = [
    ["GET /api/v1/alerts?runId", `/api/v1/alerts?runId=${runId}`],
    ["GET /api/v1/alerts", `/api/v1/alerts?limit=8`],
    ["GET /api/v1/projects/{id}/alert-rules", `/api/v1/projects/${projectId}/alert-rules`],
    ["GET /api/v1/runs/{id}/failure-clusters (whole run)", `/api/v1/runs/${runId}/failure-clusters`],
    ["GET /api/v1/runs/{id}/failure-clusters?from=100&to=149", `/api/v1/runs/${runId}/failure-clusters?from=100&to=149`],
    ["page /runs (alerts above the table)", `/runs`],
    ["page /runs/{id} (alerts, clusters panel)", `/runs/${runId}`],
  ];
  const rows: string[] = [];
  for (const [name, url] of urls) {
    const server = await startServer(`file:${DB}`, DB.replace(/\.db$/, "-server.log")); // a fresh process per URL: its first request is cold
    const base = server.api.replace(/\/api\/v1$/, "");
    try {
      const cold = await time(base + url);
      const warm: number[] = [];
      for (let i = 0; i < 5; i++) warm.push(await time(base + url));
      rows.push(`| ${name} | ${cold.toFixed(0)} | ${percentile(warm, 50).toFixed(1)} |`);
    } finally {
      await server.stop();
    }
  }
  console.log(
    `\nload average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}\n`,
  );
  console.log("| request | cold ms | warm ms (median of 5) |\n| --- | ---: | ---: |");
  for (const r of rows) console.log(r);
}

await main();
