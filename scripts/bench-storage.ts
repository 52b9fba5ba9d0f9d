// npm run bench:storage [-- --steps 3 --tokens 256 --stores sqlite,postgresql]
// What an ALFWorld-sized run costs to store, on each store: `steps` steps of the real-scale
// workload (scripts/realistic-workload.ts: 6,400 turns a step) written through lib/db's
// writeRolloutStep into a fresh database, without tokens and with `tokens` response tokens a turn.
// Prints per store and workload:
//   bytes per turn   the database's growth (tables, indexes, TOAST) over the turns written
//   JSON, zstd -3    the same steps as JSON (what a client sends), and zstd level 3 of that JSON,
//                    per turn: the yardstick a compact store is held to (ratio = bytes / zstd)
//   write            ms a step (median), in the store's transaction
//   reads            ms (median of 5): a 50-turn trajectory with its texts (getTrajectory), a step's
//                    credit inputs (loadStep), a group's text excerpts (groupTexts), 1,000 turns
//                    of the run (turnsPage)
// Each store runs in a child process of its own (lib/db holds one store a process).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { openStore, parseArgs, parseStore, loadAverage, percentile, zstd3 } from "./bench-store";
import { realisticStep } from "./realistic-workload";

const opts = parseArgs(process.argv.slice(2), { steps: "3", tokens: "256", stores: "sqlite,postgresql", child: "", url: "", "with-tokens": "0" });
const steps = Number(opts.steps);
if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps must be a positive integer (got ${opts.steps})`);

interface Figures {
  turns: number;
  bytesPerTurn: number;
  jsonPerTurn: number;
  zstdPerTurn: number | null;
  writeMs: number;
  reads: Record<string, number>;
}

const median = (xs: number[]) => percentile(xs, 50);

/** The child: writes and reads through lib/db on DATABASE_URL, prints its figures as one JSON line. */
async function child(url: string, tokens: number): Promise<Figures> {
  process.env.DATABASE_URL = url;
  const { createRun } = await import("../lib/db/runs");
  const { writeRolloutStep, getTrajectory, turnsPage, listGroups, listTrajectories } = await import("../lib/db/rollouts");
  const { loadStep, stepMeta, groupTexts } = await import("../lib/db/credit");
  const { databaseBytes, settleAfterBulkLoad } = await import("../lib/db/bulk-load");
  const size = () => databaseBytes();
  const runId = createRun({
    project: "bench",
    name: `storage-${tokens}`,
    kind: "imported",
    jobKind: null,
    config: {},
    envId: "alfworld",
    estimator: "gigpo",
    status: "running",
  }).runId;
  const before = size();
  let turns = 0;
  let json = 0;
  const zs: number[] = [];
  const writes: number[] = [];
  for (let s = 0; s < steps; s++) {
    const input = await realisticStep(s, steps, tokens);
    const body = Buffer.from(JSON.stringify(input));
    json += body.length;
    const z = zstd3(body);
    if (z !== null) zs.push(z);
    const t0 = performance.now();
    turns += writeRolloutStep(runId, input).turns;
    writes.push(performance.now() - t0);
  }
  settleAfterBulkLoad(); // what PostgreSQL's autovacuum does after a bulk load
  const bytes = size() - before;
  const step = steps - 1;
  const meta = stepMeta(runId, step);
  const group = listGroups(runId, step)[0].id;
  const traj = listTrajectories(runId, { groupId: group, pageSize: 1 }).trajectories[0].id;
  const timed = (f: () => unknown) => {
    const ms: number[] = [];
    for (let i = 0; i < 6; i++) {
      const t0 = performance.now();
      f();
      ms.push(performance.now() - t0);
    }
    return median(ms.slice(1)); // the first warms the statement cache
  };
  return {
    turns,
    bytesPerTurn: bytes / turns,
    jsonPerTurn: json / turns,
    zstdPerTurn: zs.length === steps ? zs.reduce((a, b) => a + b, 0) / turns : null,
    writeMs: median(writes),
    reads: {
      "trajectory (50 turns)": timed(() => getTrajectory(traj)),
      "step credit inputs": timed(() => loadStep(meta)),
      "group text excerpts": timed(() => groupTexts(group)),
      "1,000 turns of the run": timed(() => turnsPage(runId, Math.floor(turns / 2), 1000)),
    },
  };
}

if (opts.child) {
  parseStore(opts.child);
  const f = await child(opts.url, Number(opts["with-tokens"]));
  process.stdout.write(JSON.stringify(f) + "\n");
  process.exit(0);
}

const stores = opts.stores.split(",").map((s) => parseStore(s.trim()));
const workloads = [0, ...(Number(opts.tokens) > 0 ? [Number(opts.tokens)] : [])];
console.log(`bench:storage: ${steps} steps x 6,400 turns a workload; ${os.cpus().length} cores, load ${loadAverage()}`);
console.log(
  "\n| store | tokens a turn | bytes/turn | JSON bytes/turn | zstd -3 bytes/turn | bytes / zstd | write ms a step | " +
    ["trajectory (50 turns)", "step credit inputs", "group text excerpts", "1,000 turns of the run"].map((r) => `${r} ms`).join(" | ") +
    " |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const kind of stores)
  for (const tokens of workloads) {
    const store = await openStore(kind);
    try {
      const r = spawnSync(
        process.execPath,
        ["--import", "tsx", process.argv[1], "--child", kind, "--url", store.url, "--with-tokens", String(tokens), "--steps", String(steps)],
        {
          encoding: "utf8",
          maxBuffer: 1 << 26,
          env: process.env,
        },
      );
      if (r.status !== 0) throw new Error(`bench:storage child (${kind}, ${tokens} tokens) failed:\n${r.stderr.slice(-3000)}`);
      const f = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Figures;
      const z = f.zstdPerTurn;
      console.log(
        `| ${kind} | ${tokens} | ${f.bytesPerTurn.toFixed(0)} | ${f.jsonPerTurn.toFixed(0)} | ${z === null ? "n/a" : z.toFixed(0)} | ${z === null ? "n/a" : (f.bytesPerTurn / z).toFixed(2) + "x"} | ${f.writeMs.toFixed(0)} | ` +
          Object.values(f.reads)
            .map((ms) => ms.toFixed(1))
            .join(" | ") +
          " |",
      );
    } finally {
      await store.stop();
    }
  }
console.log(`\nload after: ${loadAverage()}${fs.existsSync("/usr/bin/zstd") ? "" : " (zstd not installed: apt-get install zstd for the yardstick)"}`);
