// How long a big ingest body stalls the dashboard: posts one ~48 MB step to a running server while a
// reader polls GET /api/v1/projects every 10 ms, and prints the reader's worst and p99 latency during
// the upload against the same reader with no upload. Goal: a 48 MB step delays a
// concurrent GET by at most 100 ms.
//   npx tsx scripts/bench-ingest-stall.ts [baseUrl]   (default: starts nothing; pass a running server's URL)
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const base = (process.argv[2] ?? "http://127.0.0.1:3000").replace(/\/$/, "") + "/api/v1";
const json = { "content-type": "application/json" };

function stepBody(targetBytes: number, step: number): string {
  const turn = (i: number) => ({
    observation: `obs ${i} `.padEnd(700, "x"),
    action: "left",
    reward: i % 7 === 0 ? 1 : 0,
    anchor: `s${i % 50}`,
    advantage: 0.1,
  });
  const groups = [];
  let size = 0;
  for (let g = 0; size < targetBytes; g++) {
    const group = {
      uid: `task-${g}`,
      envId: "sokoban",
      taskSeed: g,
      trajectories: Array.from({ length: 8 }, (_, t) => ({ success: t === 0, turns: Array.from({ length: 10 }, (_, i) => turn(g * 80 + t * 10 + i)) })),
    };
    size += JSON.stringify(group).length;
    groups.push(group);
  }
  return JSON.stringify({ step, groups });
}

async function poll(until: () => boolean): Promise<number[]> {
  const lat: number[] = [];
  while (!until()) {
    const t = performance.now();
    await fetch(`${base}/projects`).then((r) => r.text());
    lat.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 10));
  }
  return lat;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const run = await (await fetch(`${base}/runs/import`, { method: "POST", headers: json, body: JSON.stringify({ name: "stall-bench" }) })).json();
const body = stepBody(48 * 1024 * 1024, 0);
let idleDone = false;
setTimeout(() => (idleDone = true), 2000);
const idle = await poll(() => idleDone);
let done = false;
// the upload runs in its own process (curl), so this process only measures the reader
const file = path.join(os.tmpdir(), `turnlens-stall-${process.pid}.json`);
fs.writeFileSync(file, body);
const t0 = performance.now();
const upload = new Promise<{ status: number; body: string }>((resolve) => {
  execFile(
    "curl",
    [
      "-s",
      "-w",
      "\\n%{http_code}",
      "-X",
      "POST",
      "-H",
      "content-type: application/json",
      "-H",
      `x-turnlens-write-key: ${run.writeKey}`,
      "--data-binary",
      `@${file}`,
      `${base}/runs/${run.id}/steps`,
    ],
    { maxBuffer: 1 << 20 },
    (_err, stdout) => {
      const lines = stdout.trim().split("\n");
      done = true;
      fs.rmSync(file, { force: true });
      resolve({ status: Number(lines.at(-1)), body: lines.slice(0, -1).join("\n") });
    },
  );
});
const busy = await poll(() => done);
const res = await upload;
const secs = (performance.now() - t0) / 1000;
console.log(`step body: ${(body.length / 1e6).toFixed(1)} MB -> HTTP ${res.status} ${res.body.slice(0, 80)} in ${secs.toFixed(2)} s`);
console.log(
  `GET /projects with no upload:  p50 ${pct(idle, 50).toFixed(1)} ms, p99 ${pct(idle, 99).toFixed(1)} ms, max ${Math.max(...idle).toFixed(1)} ms (${idle.length} requests)`,
);
console.log(
  `GET /projects during upload:   p50 ${pct(busy, 50).toFixed(1)} ms, p99 ${pct(busy, 99).toFixed(1)} ms, max ${Math.max(...busy).toFixed(1)} ms (${busy.length} requests)`,
);
console.log(`worst added delay: ${(Math.max(...busy) - pct(idle, 50)).toFixed(1)} ms (goal <= 100 ms)`);
