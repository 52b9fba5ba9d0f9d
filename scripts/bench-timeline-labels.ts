// The task timeline, the side-by-side view and labels at the bench:realistic scale, through the
// production server: one run of 150 steps x 16 tasks x 8 trajectories x 50 turns (6,400 turns a
// step, scripts/realistic-workload.ts, no response tokens) in which the same 16 tasks recur at every
// step (uid task-0..15: a task's timeline spans all 150 steps, 1,200 trajectories), 300 labelled
// trajectories and turns. Each case: the cold latency (first request of that URL in a fresh server
// process, after /api/v1/projects has loaded Next and opened the database) and the warm one (median
// of the next 5).
//
//   node_modules/.bin/tsx scripts/bench-timeline-labels.ts [--steps 150] [--db FILE] [--reuse]
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
const DB = path.resolve(opt("db") ?? `data/bench-timeline-${STEPS}.db`);
const META = DB.replace(/\.db$/, "") + ".json";
process.env.DATABASE_URL = `file:${DB}`;

interface Meta {
  runId: string;
  a: string;
  b: string;
  trajectoryId: string;
  step: number;
  groupId: string;
}

async function seed(): Promise<Meta> {
  for (const f of [DB, DB + "-wal", DB + "-shm", META]) fs.rmSync(f, { force: true });
  fs.mkdirSync(path.dirname(DB), { recursive: true });
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: process.env });
  const { createRun, finishImportedRunRow } = await import("../lib/db/runs");
  const { writeRolloutStep, listTrajectories } = await import("../lib/db/rollouts");
  const { summarizeStepInput } = await import("../lib/schemas/step-summary");
  const { createLabel, applyLabel } = await import("../lib/db/labels");
  const { checkpointWal } = await import("../lib/db/bulk-load");
  const runId = createRun({
    project: "bench",
    name: `alfworld-${STEPS}x6400`,
    kind: "imported",
    jobKind: null,
    config: {},
    envId: "alfworld",
    status: "running",
  }).runId;
  const t0 = performance.now();
  for (let step = 0; step < STEPS; step++) {
    const input = await realisticStep(step, STEPS, 0);
    input.groups.forEach((g, i) => {
      Object.assign(g, { uid: `task-${i}`, taskSeed: i });
    });
    writeRolloutStep(runId, input, null, undefined, { summary: summarizeStepInput(input) });
    if (step % 10 === 9) console.log(`  wrote ${step + 1}/${STEPS} steps, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  finishImportedRunRow(runId, "succeeded", new Date());
  const labels = ["reward hacking", "format error", "loops"].map((name) => createLabel({ project: "bench", name }));
  // 300 labels: every other step, 2 trajectories of task-3 (one whole, one at a turn)
  let n = 0;
  for (let step = 0; step < STEPS && n < 300; step += 1) {
    const page = listTrajectories(runId, { step, pageSize: 200 }).trajectories.filter((t) => t.uid === "task-3");
    applyLabel(page[0].id, { labelId: labels[step % 3].id, turn: null, note: "bench" });
    applyLabel(page[1].id, { labelId: labels[(step + 1) % 3].id, turn: 7, note: "" });
    n += 2;
  }
  const first = listTrajectories(runId, { step: 0, pageSize: 200 }).trajectories.find((t) => t.uid === "task-3")!;
  const last = listTrajectories(runId, { step: STEPS - 1, pageSize: 200 }).trajectories.find((t) => t.uid === "task-3")!;
  checkpointWal();
  const meta: Meta = { runId, a: first.id, b: last.id, trajectoryId: last.id, step: STEPS - 1, groupId: last.groupId };
  fs.writeFileSync(META, JSON.stringify(meta, null, 2));
  console.log(`stored ${STEPS} steps in ${((performance.now() - t0) / 1000).toFixed(0)} s, ${n} labels`);
  return meta;
}

const meta: Meta = args.includes("--reuse") && fs.existsSync(META) && fs.existsSync(DB) ? JSON.parse(fs.readFileSync(META, "utf8")) : await seed();

async function time(base: string, url: string): Promise<{ ms: number; bytes: number; status: number }> {
  const t = performance.now();
  const res = await fetch(`${base}${url}`);
  const body = await res.arrayBuffer();
  return { ms: performance.now() - t, bytes: body.byteLength, status: res.status };
}

const { runId, a, b, step, groupId, trajectoryId } = meta;
const label = encodeURIComponent("reward hacking");
const cases: [string, string][] = [
  ["task timeline, 150 steps (API)", `/api/v1/tasks/timeline?runs=${runId}&task=task-3`],
  ["task timeline by seed (API)", `/api/v1/tasks/timeline?runs=${runId}&seed=3&envId=alfworld`],
  ["two trajectories side by side (API)", `/api/v1/trajectories/diff?a=${a}&b=${b}`],
  ["labels per step (API)", `/api/v1/runs/${runId}/labels`],
  ["labels export (API)", `/api/v1/runs/${runId}/labels/export`],
  ["a trajectory's labels (API)", `/api/v1/trajectories/${trajectoryId}/labels`],
  ["label set (API)", `/api/v1/labels?project=bench`],
  ["trajectories with a label (API)", `/api/v1/runs/${runId}/trajectories?label=${label}`],
  ["search by label (API)", `/api/v1/search/trajectories?runs=${runId}&label=${label}`],
  ["task timeline with A and B (page)", `/tasks?runs=${runId}&task=task-3&a=${a}&b=${b}`],
  ["run page with labels per step (page)", `/runs/${runId}`],
  ["trajectory view with labels (page)", `/runs/${runId}/trajectories?step=${step}&group=${groupId}&traj=${trajectoryId}`],
  ["search by label (page)", `/search?runs=${runId}&label=${label}`],
];
console.log(`\nbench-timeline-labels — ${STEPS} steps x 6,400 turns, one task at every step`);
console.log(
  `load average before: ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")} (${os.cpus().length} cores)\n`,
);
console.log("| what | cold ms | warm ms (median of 5) | KB | status |");
console.log("|---|---:|---:|---:|---|");
for (const [name, url] of cases) {
  const server = await startServer(`file:${DB}`, DB.replace(/\.db$/, "-server.log"));
  const base = server.api.replace(/\/api\/v1$/, "");
  try {
    const cold = await time(base, url);
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) warm.push((await time(base, url)).ms);
    console.log(`| ${name} | ${cold.ms.toFixed(0)} | ${percentile(warm, 50).toFixed(0)} | ${(cold.bytes / 1024).toFixed(0)} | ${cold.status} |`);
  } finally {
    await server.stop();
  }
}
console.log(
  `\nload average after: ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
