// node_modules/.bin/tsx scripts/bench-turn-bytes.ts [--steps 10]
// Where a stored turn's bytes go, without a server: `steps` steps of the ALFWorld-sized workload
// (scripts/realistic-workload.ts, no tokens) written in-process with writeRolloutStep (search index
// and credit summary included, as ingest completes a step) into a fresh SQLite database, then:
//   the whole database a turn (checkpointed) beside the JSON a client sends and zstd -3 of it
//   CPU ms a step of writeRolloutStep (median)
//   bytes a turn by table and index (SQLite's dbstat: pages, payload, unused page space)
//   CPU ms of reading a trajectory (getTrajectory) and a group's text excerpts (groupTexts)
//   the codecs on one step's texts: each trajectory's deflated (level 6) against a group's together
//   in Brotli at qualities 4-7 (lib/db/trajectory-pack.ts takes quality 6), bytes a turn and CPU ms
// bench:realistic measures the same database through the Python client and the production server.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import Database from "better-sqlite3";
import { loadAverage, parseArgs, percentile, zstd3 } from "./bench-store";
import { realisticStep } from "./realistic-workload";

const opts = parseArgs(process.argv.slice(2), { steps: "10" });
const steps = Number(opts.steps);
if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps must be a positive integer (got ${opts.steps})`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-turn-bytes-"));
const file = path.join(dir, "bench.db");
process.env.DATABASE_URL = `file:${file}`;
execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: process.env });
const { createRun } = await import("../lib/db/runs");
const { writeRolloutStep, getTrajectory } = await import("../lib/db/rollouts");
const { groupTexts } = await import("../lib/db/credit");
const { summarizeStepInput } = await import("../lib/schemas/step-summary");
const { checkpointWal } = await import("../lib/db/bulk-load");
const { getRawDb } = await import("../lib/db/raw");

const cpuMs = (since: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1000;
};

try {
  console.log(`bench-turn-bytes: ${steps} steps x 6,400 turns, no tokens (load average ${loadAverage()})`);
  const runId = createRun({
    project: "bench",
    name: "turn-bytes",
    kind: "imported",
    jobKind: null,
    config: {},
    envId: "alfworld",
    estimator: "gigpo",
    status: "running",
  }).runId;
  let json = 0;
  let zstd: number | null = 0;
  let turns = 0;
  const writeMs: number[] = [];
  for (let step = 0; step < steps; step++) {
    const input = await realisticStep(step, steps, 0);
    const line = Buffer.from(JSON.stringify(input) + "\n");
    json += line.length;
    const z = zstd3(line);
    zstd = z === null || zstd === null ? null : zstd + z;
    const t0 = process.cpuUsage();
    turns += writeRolloutStep(runId, input, null, undefined, { summary: summarizeStepInput(input) }).turns;
    writeMs.push(cpuMs(t0));
  }
  checkpointWal();
  const bytes = fs.statSync(file).size;
  const vsZstd =
    zstd === null ? "zstd -3 n/a (apt-get install zstd)" : `zstd -3 of it ${(zstd / turns).toFixed(1)} (stored / zstd: ${(bytes / zstd).toFixed(2)}x)`;
  console.log(`the whole database: ${(bytes / turns).toFixed(1)} bytes a turn; the JSON ${(json / turns).toFixed(0)}; ${vsZstd}`);
  console.log(
    `writeRolloutStep: ${percentile(writeMs, 50).toFixed(0)} ms CPU a step (median; ${Math.min(...writeMs).toFixed(0)}-${Math.max(...writeMs).toFixed(0)})`,
  );

  const db = new Database(file, { readonly: true });
  const rows = db
    .prepare(`SELECT name, sum(pgsize) AS size, sum(payload) AS payload, sum(unused) AS unused FROM dbstat GROUP BY name ORDER BY size DESC`)
    .all() as { name: string; size: number; payload: number; unused: number }[];
  const per = (x: number) => (x / turns).toFixed(1).padStart(6);
  console.log("| table or index | bytes a turn | payload | unused |\n| --- | ---: | ---: | ---: |");
  for (const r of rows.filter((r) => r.size / turns >= 0.5)) console.log(`| ${r.name} | ${per(r.size)} | ${per(r.payload)} | ${per(r.unused)} |`);
  const rest = rows.filter((r) => r.size / turns < 0.5).reduce((s, r) => s + r.size, 0);
  console.log(`| the other ${rows.filter((r) => r.size / turns < 0.5).length} | ${per(rest)} | | |`);
  const blobs = db.prepare(`SELECT sum(length("turnData")) AS data, sum(length("turnTexts")) AS texts FROM "Trajectory"`).get() as {
    data: number;
    texts: number;
  };
  console.log(`Trajectory's packed columns: turnData ${per(blobs.data)}, turnTexts ${per(blobs.texts)} bytes a turn`);
  db.close();

  // reads: a trajectory that is not its group's first (its texts are in the first one's row) and groups' excerpts
  const raw = getRawDb();
  const ids = raw.prepare(`SELECT "id" FROM "Trajectory" WHERE "index" = 3 LIMIT 200`).pluck().all() as string[];
  const groups = raw.prepare(`SELECT "id" FROM "RolloutGroup" LIMIT 100`).pluck().all() as string[];
  for (const id of ids.slice(0, 20)) getTrajectory(id); // warm-up
  let t0 = process.cpuUsage();
  for (const id of ids) getTrajectory(id);
  const traj = cpuMs(t0) / ids.length;
  t0 = process.cpuUsage();
  for (const g of groups) groupTexts(g);
  console.log(
    `reads: getTrajectory ${traj.toFixed(2)} ms CPU, groupTexts ${(cpuMs(t0) / groups.length).toFixed(2)} ms CPU (mean of ${ids.length} / ${groups.length})`,
  );

  const input = await realisticStep(steps - 1, steps, 0);
  const textsOf = (t: (typeof input.groups)[number]["trajectories"][number]) =>
    JSON.stringify({ observation: t.turns.map((u) => u.observation), action: t.turns.map((u) => u.action), info: t.turns.map((u) => u.info ?? null) });
  const n = input.groups.reduce((s, g) => s + g.trajectories.reduce((a, t) => a + t.turns.length, 0), 0);
  const codec = (label: string, parts: string[], pack: (s: string) => Buffer) => {
    const t = process.cpuUsage();
    const size = parts.reduce((a, p) => a + pack(p).length, 0);
    console.log(`  ${label.padEnd(44)} ${(size / n).toFixed(1).padStart(5)} bytes a turn, ${cpuMs(t).toFixed(0).padStart(3)} ms CPU`);
  };
  console.log("codecs on one step's texts:");
  codec(
    "each trajectory's, deflate level 6",
    input.groups.flatMap((g) => g.trajectories.map(textsOf)),
    (s) => zlib.deflateSync(s, { level: 6 }),
  );
  const together = input.groups.map((g) => `[${g.trajectories.map(textsOf).join(",")}]`);
  for (const q of [4, 5, 6, 7])
    codec(`a group's together, Brotli quality ${q}`, together, (s) =>
      zlib.brotliCompressSync(s, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: q,
          [zlib.constants.BROTLI_PARAM_LGWIN]: 21,
          [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: s.length,
        },
      }),
    );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
