// npm run bench:realistic — the dashboard at ALFWorld scale, through the production server:
// one run of N training steps x 16 tasks x 8 trajectories x 50 turns (6,400 turns a step) with
// 1-2 KB observations, anchors, stored GiGPO advantages and --tokens response tokens a turn
// (scripts/realistic-workload.ts).
//
// Ingest: each step is logged through the Python client as a trainer would, and the same turns to
// Trackio as a table a step (scripts/bench-realistic-ingest.py, in bench:peers' venv). Prints per
// step how long log_rollouts held the loop and when the step was stored, Trackio's figures beside
// them, then the bytes the store took a turn against the JSON sent and zstd -3 of it.
//
// Reads: the cold latency (first request of that URL in a fresh server process, after one request
// to /api/v1/projects has loaded Next and opened the database) and the warm one (median of the
// next 5) of the runs list, the run page, a 50-turn trajectory (API and page, with the page's HTML
// size), a task group's credit (stored, and recomputed under GRPO) and credit over training (API
// and page), with the machine's load average.
//
//   node_modules/.bin/tsx scripts/bench-realistic.ts [--steps 30] [--tokens 256] [--direct] [--server DIR] [--db FILE] [--reuse]
//     --steps   training steps (default 30; 150 is the size the goals are set at)
//     --tokens  response tokens a turn with ids, texts, log-probs, advantages, entropies (default 256; 0: none)
//     --direct  write the steps with lib/db instead of through the client (no ingest figures, no
//               Trackio): the read side alone, in a fraction of the time
//     --server  a directory holding a production build (`.next/BUILD_ID`) to serve; default the current one
//     --db      the SQLite file to write and serve (default data/bench-realistic-<steps>.db)
//     --reuse   keep an already written database of that name (its meta file beside it)
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { G, GIGPO_PARAMS, T, TASKS, realisticStep } from "./realistic-workload";
import { freeLoopbackPort } from "../test/helpers/postgres";
import { percentile, sqliteBytesInUse, zstd3 } from "./bench-store";

const args = process.argv.slice(2);
const opt = (k: string) => {
  const i = args.indexOf(`--${k}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const STEPS = Number(opt("steps") ?? 30);
const TOKENS = Number(opt("tokens") ?? 256);
const DIRECT = args.includes("--direct");
const SERVER = path.resolve(opt("server") ?? ".");
const DB = path.resolve(opt("db") ?? `data/bench-realistic-${STEPS}.db`);
const META = DB.replace(/\.db$/, "") + ".json";
const PORT = Number(process.env.BENCH_PORT ?? (await freeLoopbackPort()));

interface Meta {
  runId: string;
  steps: number;
  turns: number;
  step: number;
  groupId: string;
  trajectoryId: string;
}

const median = (xs: number[]) => percentile(xs, 50);

/** The run's steps through the Python client against the server, Trackio beside it; returns the run id. */
async function ingest(): Promise<{ runId: string; json: number; zstd: number | null }> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-realistic-"));
  const stepsFile = path.join(work, "steps.jsonl");
  let json = 0;
  let zstd: number | null = 0;
  for (let step = 0; step < STEPS; step++) {
    const line = Buffer.from(JSON.stringify(await realisticStep(step, STEPS, TOKENS)) + "\n");
    fs.appendFileSync(stepsFile, line);
    json += line.length;
    const z = zstd3(line);
    zstd = z === null || zstd === null ? null : zstd + z;
  }
  execFileSync("python3", ["scripts/bench-peers.py", "--venv-only"], { stdio: "inherit" }); // trackio's venv
  const venvPython = path.resolve("node_modules/.turnlens-peers-venv/bin/python");
  const server = await startServer();
  try {
    const py = spawn(
      fs.existsSync(venvPython) ? venvPython : "python3",
      ["scripts/bench-realistic-ingest.py", stepsFile, `http://127.0.0.1:${PORT}`, path.join(work, "trackio")],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let runId = "";
    const rows: { step: number; blocked: number; stored: number; trackio_blocked: number; trackio_stored: number }[] = [];
    console.log(`\ningest: ${STEPS} steps x 6,400 turns, ${TOKENS} tokens a turn, through the Python client; Trackio on the same turns`);
    console.log(
      "| step | log_rollouts held the loop, ms | stored after, s | store grew, bytes a turn | Trackio log() held, ms | Trackio stored after, s | Trackio / TurnLens |",
    );
    console.log("|---:|---:|---:|---:|---:|---:|---:|");
    // the database's size as a reader sees it (WAL included): pages in use x page size
    const reader = new Database(DB, { readonly: true });
    const size = () => sqliteBytesInUse(reader);
    let last = size();
    let buf = "";
    py.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const text = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!text.startsWith("{")) continue; // Trackio's own messages
        const r = JSON.parse(text);
        if (r.runId) runId = r.runId;
        else {
          rows.push(r);
          const now = size();
          const grew = (now - last) / (TASKS * G * T);
          last = now;
          console.log(
            `| ${r.step} | ${(r.blocked * 1e3).toFixed(3)} | ${r.stored.toFixed(3)} | ${grew.toFixed(0)} | ${(r.trackio_blocked * 1e3).toFixed(0)} | ${r.trackio_stored.toFixed(3)} | ${(r.trackio_stored / r.stored).toFixed(2)}x |`,
          );
        }
      }
    });
    const code = await new Promise<number | null>((r) => py.once("exit", r));
    reader.close();
    if (code !== 0) throw new Error(`bench-realistic-ingest.py exited ${code}`);
    const later = rows.slice(1); // step 0 is checked in the loop by design
    if (later.length)
      console.log(
        `\nsteps 1-${rows.length - 1}, median: log_rollouts held the loop ${(median(later.map((r) => r.blocked)) * 1e3).toFixed(3)} ms, stored after ${median(later.map((r) => r.stored)).toFixed(3)} s; ` +
          `Trackio stored after ${median(later.map((r) => r.trackio_stored)).toFixed(3)} s (${(median(later.map((r) => r.trackio_stored)) / median(later.map((r) => r.stored))).toFixed(2)}x TurnLens's time)`,
      );
    return { runId, json, zstd };
  } finally {
    await stopServer(server);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The run's steps written with lib/db (--direct). */
async function writeDirect(): Promise<string> {
  const { createRun } = await import("../lib/db/runs");
  const { writeRolloutStep } = await import("../lib/db/rollouts");
  const { summarizeStepInput } = await import("../lib/schemas/step-summary");
  const runId = createRun({
    project: "bench",
    name: `alfworld-${STEPS}x6400`,
    kind: "imported",
    jobKind: null,
    config: { estimator: "gigpo", estimatorParams: GIGPO_PARAMS },
    envId: "alfworld",
    estimator: "gigpo",
    status: "running",
  }).runId;
  const t0 = performance.now();
  for (let step = 0; step < STEPS; step++) {
    const input = await realisticStep(step, STEPS, TOKENS);
    writeRolloutStep(runId, input, null, undefined, { summary: summarizeStepInput(input) });
    if (step % 10 === 9) console.log(`  wrote ${step + 1}/${STEPS} steps, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  return runId;
}

async function seed(): Promise<Meta> {
  for (const f of [DB, DB + "-wal", DB + "-shm", META]) fs.rmSync(f, { force: true });
  fs.mkdirSync(path.dirname(DB), { recursive: true });
  process.env.DATABASE_URL = `file:${DB}`;
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: process.env });
  const t0 = performance.now();
  const sent = DIRECT ? null : await ingest();
  const runId = sent ? sent.runId : await writeDirect();
  const { finishImportedRunRow } = await import("../lib/db/runs");
  const { listGroups, listTrajectories, runTrajectoryTotals } = await import("../lib/db/rollouts");
  const { checkpointWal } = await import("../lib/db/bulk-load");
  finishImportedRunRow(runId, "succeeded", new Date());
  const turns = runTrajectoryTotals(runId).turns;
  const step = STEPS - 1;
  const groupId = listGroups(runId, step)[0].id;
  const trajectoryId = listTrajectories(runId, { groupId, pageSize: 1 }).trajectories[0].id;
  checkpointWal();
  const bytes = fs.statSync(DB).size; // a database of this run only, checkpointed
  const meta: Meta = { runId, steps: STEPS, turns, step, groupId, trajectoryId };
  fs.writeFileSync(META, JSON.stringify(meta, null, 2));
  console.log(
    `\nstored ${turns.toLocaleString()} turns in ${((performance.now() - t0) / 1000).toFixed(0)} s: ${(bytes / 2 ** 30).toFixed(2)} GiB, ${(bytes / turns).toFixed(0)} bytes a turn (the whole database)`,
  );
  if (sent) {
    const z =
      sent.zstd === null
        ? "zstd -3 n/a (apt-get install zstd)"
        : `zstd -3 of it ${(sent.zstd / turns).toFixed(0)} (stored / zstd: ${(bytes / sent.zstd).toFixed(2)}x)`;
    console.log(`the JSON the client was given: ${(sent.json / turns).toFixed(0)} bytes a turn; ${z}`);
  }
  return meta;
}

const meta: Meta = args.includes("--reuse") && fs.existsSync(META) && fs.existsSync(DB) ? JSON.parse(fs.readFileSync(META, "utf8")) : await seed();
if (!fs.existsSync(path.join(SERVER, ".next/BUILD_ID"))) throw new Error(`${SERVER} holds no production build (.next/BUILD_ID): run next build there first`);

async function startServer(): Promise<ChildProcess> {
  const server = spawn(process.execPath, ["scripts/web-server.mjs"], {
    cwd: SERVER,
    env: { ...process.env, NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1", DATABASE_URL: `file:${DB}`, PORT: String(PORT) },
    stdio: ["ignore", "ignore", "inherit"],
  });
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${PORT}/api/v1/projects`)).ok) return server;
    } catch {
      /* not up yet */
    }
    if (i > 600) throw new Error("server did not start");
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function stopServer(s: ChildProcess) {
  if (s.exitCode !== null || s.signalCode !== null) throw new Error(`the server exited on its own (${s.exitCode ?? s.signalCode})`);
  const done = new Promise((r) => s.once("exit", r));
  s.kill("SIGTERM");
  await done;
}

async function time(url: string): Promise<{ ms: number; bytes: number; status: number }> {
  const t = performance.now();
  const res = await fetch(`http://127.0.0.1:${PORT}${url}`);
  const body = await res.arrayBuffer();
  return { ms: performance.now() - t, bytes: body.byteLength, status: res.status };
}

const { runId, step, groupId, trajectoryId } = meta;
// Each case opens a fresh server: its first request is cold for every cache of ours.
const cases: [string, string][] = [
  ["runs list (API)", `/api/v1/runs`],
  ["runs list (page)", `/runs`],
  ["run page", `/runs/${runId}`],
  ["trajectory (API)", `/api/v1/trajectories/${trajectoryId}`],
  ["trajectory (page)", `/runs/${runId}/trajectories?step=${step}&group=${groupId}&traj=${trajectoryId}`],
  ["group credit, stored (API)", `/api/v1/runs/${runId}/steps/${step}/groups/${groupId}/credit`],
  ["group credit, GRPO (API)", `/api/v1/runs/${runId}/steps/${step}/groups/${groupId}/credit?estimator=grpo`],
  ["credit over training (API)", `/api/v1/runs/${runId}/credit`],
  ["credit over training (page)", `/runs/${runId}/credit`],
];
console.log(`\nbench:realistic — ${meta.steps} steps x 6,400 turns (${meta.turns.toLocaleString()} turns), server ${SERVER}`);
console.log(
  `load average before: ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")} (${os.cpus().length} cores)\n`,
);
console.log("| what | cold ms | warm ms (median of 5) | KB | status |");
console.log("|---|---:|---:|---:|---|");
const loads: number[] = [];
for (const [name, url] of cases) {
  const server = await startServer();
  try {
    const cold = await time(url);
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) warm.push((await time(url)).ms);
    warm.sort((a, b) => a - b);
    loads.push(os.loadavg()[0]);
    console.log(`| ${name} | ${cold.ms.toFixed(0)} | ${warm[2].toFixed(0)} | ${(cold.bytes / 1024).toFixed(0)} | ${cold.status} |`);
  } finally {
    await stopServer(server);
  }
}
console.log(
  `\nload average (1 min) during the cases: ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}; after: ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
