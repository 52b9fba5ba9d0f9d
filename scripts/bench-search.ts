// npm run bench:search -- [--store both|sqlite|postgresql] [--turns 1000000,10000000] [--repeats 7]
// Trajectory search latency on a big store, both stores in one run: fills a fresh database with
// ALFWorld-sized steps (16 tasks x 8 trajectories x 50 turns, 1-2 KB observations: the workload of
// scripts/realistic-workload.ts) through the app's own write path (writeRolloutStep, which indexes
// each trajectory as it stores it), in runs of 160 steps (1,024,000 turns) of one project, and at
// each size in --turns times a set of searches: over one run and over the whole project, by text,
// phrase, per-turn condition, filters and sort. Each search is the API's handler function called
// in-process (the route is a thin wrapper), first page of 50; the figure is the median and the
// slowest of --repeats calls against different runs (the first call of each search is cold), and
// "stall" the longest the event loop waited during them (what a concurrent request would wait).
// Also prints the index's bytes a turn and what indexing adds to a step's write.
//
// Twenty distinct steps are generated and written round-robin under new step numbers (generating
// 1,500 steps would cost more than writing them); every run holds all twenty.
import { execFileSync } from "node:child_process";
import os from "node:os";
import { loadAverage, openStore, parseArgs, parseStore, percentile, sqliteBytesInUse, type StoreKind } from "./bench-store";
import { realisticStep } from "./realistic-workload";
import type { RolloutStepInput } from "../lib/schemas/rollouts";

const opts = parseArgs(process.argv.slice(2), { store: "both", turns: "1000000,10000000", repeats: "7", child: "" });
const STEP_TURNS = 6400;
const STEPS_PER_RUN = 160;
const DISTINCT = 20;

if (!opts.child) {
  // the parent: one child process a store (each opens its own store and process-wide connection)
  const kinds: StoreKind[] = opts.store === "both" ? ["sqlite", "postgresql"] : [parseStore(opts.store)];
  console.log(`bench:search  ${new Date().toISOString()}  ${os.cpus().length} cores  load ${loadAverage()}  sizes ${opts.turns} turns`);
  for (const kind of kinds) {
    const store = await openStore(kind);
    try {
      execFileSync(process.execPath, ["--import", "tsx", "scripts/bench-search.ts", ...process.argv.slice(2), "--child", kind], {
        stdio: "inherit",
        env: { ...process.env, DATABASE_URL: store.url, TURNLENS_SQLITE_FILE: store.file ?? "" },
      });
    } finally {
      await store.stop();
    }
  }
  process.exit(0);
}

const kind = parseStore(opts.child);
const sizes = opts.turns
  .split(",")
  .map(Number)
  .sort((a, b) => a - b);
const repeats = Number(opts.repeats);
const { createRun } = await import("../lib/db/runs");
const { writeRolloutStep } = await import("../lib/db/rollouts");
const { getRawDb } = await import("../lib/db/raw");
const { dialect } = await import("../lib/db/dialect");
const { searchTrajectories, indexMissing, dropSearchIndex } = await import("../lib/db/trajectory-search");
const { trajectorySearchQuerySchema } = await import("../lib/schemas/search");

console.log(`\n== ${kind}`);
const templates: RolloutStepInput[] = [];
for (let i = 0; i < DISTINCT; i++) templates.push(await realisticStep(i, DISTINCT));

const runs: string[] = [];
let turns = 0;
let step = 0;
const writeMs: number[] = [];
/** Writes whole steps until the store holds `target` turns. */
function fill(target: number) {
  while (turns < target) {
    if (step % STEPS_PER_RUN === 0)
      runs.push(createRun({ project: "bench-search", name: `run-${runs.length}`, kind: "imported", jobKind: null, config: {}, status: "running" }).runId);
    const t0 = performance.now();
    writeRolloutStep(runs[runs.length - 1], { ...templates[step % DISTINCT], step: step % STEPS_PER_RUN });
    writeMs.push(performance.now() - t0);
    step++;
    turns += STEP_TURNS;
    if (step % 50 === 0) process.stdout.write(`\r  ${turns.toLocaleString()} turns written…`);
  }
  process.stdout.write("\r");
}

/**
 * What indexing costs a step: a scratch run's steps written, their index entries deleted and made
 * again from the stored texts (which also inflates the texts: an upper bound of what writing pays).
 */
function indexCostMs(): number {
  const run = createRun({
    project: "bench-search-scratch",
    name: `reindex-${Date.now()}`,
    kind: "imported",
    jobKind: null,
    config: {},
    status: "running",
  }).runId;
  for (let i = 0; i < 3; i++) writeRolloutStep(run, { ...templates[i], step: i });
  dropSearchIndex(run);
  const t0 = performance.now();
  indexMissing([run]);
  return (performance.now() - t0) / 3;
}

function indexBytes(): { search: number; text: number } {
  const d = dialect(getRawDb());
  return { search: d.tableBytes(getRawDb(), "TrajectorySearch"), text: d.tableBytes(getRawDb(), "TrajectoryText") };
}

const SEARCHES: [string, (run: string) => Record<string, string>][] = [
  ["run: word in actions", (run) => ({ runs: run, text: "microwave", in: "action" })],
  ["run: phrase in observations", (run) => ({ runs: run, text: '"put a clean mug"', in: "observation" })],
  ["run: failures, turn 3 advantage < 0", (run) => ({ runs: run, outcome: "failure", minTurn: "2", maxTurn: "2", advantage: "negative" })],
  ["run: word + per-turn, by return", (run) => ({ runs: run, text: "knife", in: "action", advantage: "positive", minTurn: "40", sort: "return" })],
  ["run: one task", (run) => ({ runs: run, task: `task-${7 * 16 + 3}` })],
  ["run: return range, by length", (run) => ({ runs: run, minReturn: "0.5", sort: "length", order: "asc" })],
  ["project: word in actions", () => ({ project: "bench-search", text: "microwave", in: "action" })],
  ["project: phrase, successes", () => ({ project: "bench-search", text: '"clean knife"', outcome: "success" })],
  ["project: invalid turn after 45", () => ({ project: "bench-search", valid: "false", minTurn: "45" })],
  ["project: step 80, by return", () => ({ project: "bench-search", step: "80", sort: "return" })],
  ["every run: an anchor no turn has", () => ({ anchor: "zz-no-such-anchor" })],
];

/** The search's answer and the longest the event loop waited meanwhile (what a concurrent request would have waited), in ms. */
async function timedSearch(raw: Record<string, string>) {
  const q = trajectorySearchQuerySchema.parse(raw);
  // a timer every millisecond: the longest gap between its ticks is the longest the loop was held
  const s0 = performance.now();
  let last = s0;
  let stall = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  const res = await searchTrajectories(q);
  const ms = performance.now() - s0;
  await new Promise((r) => setTimeout(r, 5)); // the tick due during the search's last slice
  clearInterval(tick);
  return { res, ms, stall };
}

for (const size of sizes) {
  const t0 = performance.now();
  fill(size);
  const loadS = (performance.now() - t0) / 1000;
  const b = indexBytes();
  console.log(
    `\n${kind}, ${turns.toLocaleString()} turns (${runs.length} run(s) of up to ${(STEPS_PER_RUN * STEP_TURNS).toLocaleString()}): written in ${loadS.toFixed(0)} s, a ${STEP_TURNS}-turn step in ${percentile(writeMs, 50).toFixed(0)} ms (median), indexing a step from its stored texts ${indexCostMs().toFixed(0)} ms; index ${(b.search / turns).toFixed(1)} + ${(b.text / turns).toFixed(1)} bytes a turn (keys + words)` +
      (kind === "sqlite" ? `, database ${(sqliteBytesInUse(getRawDb() as never) / turns).toFixed(0)} bytes a turn` : ""),
  );
  console.log(
    `  ${"search".padEnd(38)} ${"hits".padStart(5)} ${"scanned".padStart(8)} ${"cold ms".padStart(8)} ${"p50 ms".padStart(8)} ${"max ms".padStart(8)} ${"stall ms".padStart(8)}`,
  );
  for (const [name, make] of SEARCHES) {
    const ms: number[] = [];
    let hits = 0;
    let scanned = 0;
    let stall = 0;
    for (let i = 0; i < repeats; i++) {
      const t = await timedSearch({ ...make(runs[i % runs.length]), pageSize: "50" });
      ms.push(t.ms);
      hits = t.res.trajectories.length;
      scanned = t.res.scanned;
      stall = Math.max(stall, t.stall);
    }
    console.log(
      `  ${name.padEnd(38)} ${String(hits).padStart(5)} ${String(scanned).padStart(8)} ${ms[0].toFixed(1).padStart(8)} ${percentile(ms, 50).toFixed(1).padStart(8)} ${Math.max(
        ...ms,
      )
        .toFixed(1)
        .padStart(8)} ${stall.toFixed(1).padStart(8)}`,
    );
  }
  // a search no trajectory matches, every page of it (pages of 200, as the Python client asks)
  let cursor: string | undefined;
  let pages = 0;
  let total = 0;
  let stall = 0;
  for (;;) {
    const t = await timedSearch({ anchor: "zz-no-such-anchor", pageSize: "200", ...(cursor ? { cursor } : {}) });
    pages++;
    total += t.ms;
    stall = Math.max(stall, t.stall);
    if (!t.res.next) break;
    cursor = t.res.next;
  }
  console.log(
    `  every page of "an anchor no turn has" over every run: ${pages} page(s) in ${total.toFixed(0)} ms; the event loop waited at most ${stall.toFixed(1)} ms`,
  );
}
console.log(`\nload ${loadAverage()}`);
