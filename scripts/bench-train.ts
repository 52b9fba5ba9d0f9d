// npm run bench:train — does the default demo run learn on this machine, and how fast?
// Trains the launch form's default config (a tiny transformer on random 6x6 FrozenLake maps,
// GiGPO) until greedy success on 200 held-out maps (distinct maps training never draws, see
// lib/envs/heldout.ts) reaches 0.9, and prints the wall time to get there beside the success on
// the same maps of a random policy, scripted rules (among them right-or-down rules that read 1 to 6
// moves ahead: a policy that never turns back needs 4 for 0.9) and breadth-first search, the held-out
// maps training drew (eval/train_overlap, must be 0), the time to beat the scripted rule, the
// throughput (rollout turns/s, update samples/s and optimizer steps/s) and the load average.
// Target: under 10 minutes.
//   flags: --target 0.9  --max-minutes 15  --config extra.json (overrides merged into the defaults)
// At --max-minutes the run is canceled (a cancel request, as the UI's Cancel button makes: the
// worker stops the runner at its next heartbeat and the run ends `canceled`), not left `queued`.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { launchRun } from "../lib/runs/launch";
import { launchRunSchema } from "../lib/schemas/runs";
import { getRun } from "../lib/db/runs";
import { readSeries } from "../lib/db/metric-series";
import { createEnv, getEnvSpec } from "../lib/envs/registry";
import { playEpisode } from "../lib/envs/play";
import { randomAction } from "../lib/envs/random-policy";
import { createRng } from "../lib/envs/rng";
import type { Env } from "../lib/envs/types";
import { evalTasks } from "../lib/envs/heldout";
import { shortestPath } from "../lib/envs/frozenlake";
import { heldOutFor } from "../workers/runners/train";
import { InvalidJobTransitionError } from "../lib/jobs/errors";
import { requestCancel } from "../lib/jobs/queue";

const args = process.argv.slice(2);
const flag = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const target = Number(flag("target", "0.9"));
const maxMinutes = Number(flag("max-minutes", "15"));
const overrides = args.includes("--config") ? JSON.parse(fs.readFileSync(flag("config", ""), "utf8")) : {};

const launch = launchRunSchema.parse({
  jobKind: "train",
  name: `bench-train-${new Date().toISOString().slice(0, 19)}`,
  tags: ["bench"],
  config: { ...overrides, targetSuccess: target, steps: overrides.steps ?? 2000 },
});
if (launch.jobKind !== "train") throw new Error("unreachable");
const cfg = launch.config;

// ---- floors on the same held-out maps
const env = createEnv(cfg.envId, cfg.envConfig);
const seeds = evalTasks(heldOutFor(cfg), cfg.evalEpisodes).map((t) => t.seed);
const successRate = (policy: (e: Env, i: number) => string) =>
  seeds.filter((s, i) => playEpisode(env, s, (e) => policy(e, i), { recordView: false }).success).length / seeds.length;
const rngs = seeds.map((s) => createRng(`bench-random-${s}`));
const random = successRate((e, i) => randomAction(e, rngs[i]));
/** The FrozenLake map an env shows and the player's cell. */
const gridOf = (e: Env) => {
  const v = e.view();
  if (v.kind !== "grid") throw new Error("frozenlake view is not a grid");
  const r = v.cells.findIndex((row) => row.includes("P"));
  return { cells: v.cells, r, c: v.cells[r].indexOf("P") };
};
/** The moves in the smarter rule's order of preference. */
const MOVES = [
  ["right", 0, 1],
  ["down", 1, 0],
  ["left", 0, -1],
  ["up", -1, 0],
] as const;
const safe = (cells: string[][], r: number, c: number) => cells[r]?.[c] !== undefined && cells[r][c] !== "H";
const frozenLake = cfg.envId === "frozenlake";
/** "Right if safe, else down": the obvious rule to beat (0.75 on 4x4 maps, 0.485 on these 6x6 ones). */
const heuristic = frozenLake
  ? successRate((e) => {
      const { cells, r, c } = gridOf(e);
      return safe(cells, r, c + 1) ? "right" : "down";
    })
  : null;
/** A smarter rule: the first safe move of right, down, left, up, never straight back where it came from. */
const lastMove = new Map<number, string>();
const BACK: Record<string, string> = { right: "left", left: "right", down: "up", up: "down" };
const smarter = frozenLake
  ? successRate((e, i) => {
      const { cells, r, c } = gridOf(e);
      const prev = lastMove.get(i);
      const pick = MOVES.find(([m, dr, dc]) => safe(cells, r + dr, c + dc) && m !== (prev ? BACK[prev] : undefined)) ?? MOVES[1];
      lastMove.set(i, pick[0]);
      return pick[0];
    })
  : null;
/**
 * Right or down only, reading k moves ahead: right if that cell can still reach the goal by right and
 * down moves within k more moves, else down if that one can, else the first safe of the two. The
 * scale a trained policy that never turns back sits on: it shows how far ahead it has learned to read.
 */
const LOOKAHEAD = [1, 2, 3, 4, 6] as const;
/** Cell (r, c) is safe and reaches the goal by right and down moves, or is still safe after `left` of them. */
const open = (g: string[][], r: number, c: number, left: number): boolean =>
  safe(g, r, c) && (g[r][c] === "G" || left === 0 || open(g, r, c + 1, left - 1) || open(g, r + 1, c, left - 1));
const lookahead = frozenLake
  ? LOOKAHEAD.map((k) => ({
      k,
      success: successRate((e) => {
        const { cells, r, c } = gridOf(e);
        return open(cells, r, c + 1, k) ? "right" : open(cells, r + 1, c, k) ? "down" : safe(cells, r, c + 1) ? "right" : "down";
      }),
    }))
  : null;
/** Breadth-first search on the map the policy sees: the first move of a shortest path (the ceiling, 1.0 on solvable maps). */
const bfs = frozenLake
  ? successRate((e) => {
      const { cells, r, c } = gridOf(e);
      const rows = cells.map((row) => row.join(""));
      return shortestPath(rows, r, c)?.firstMove ?? "down";
    })
  : null;

// ---- train: the same launch path as the UI, one worker running this job
const loadAtStart = os.loadavg();
const { runId, jobId } = await launchRun(launch);
console.log(
  `training run ${runId}: ${cfg.envId} ${JSON.stringify(getEnvSpec(cfg.envId).configSchema.parse(cfg.envConfig))}, ${cfg.estimator}, G=${cfg.groupSize} x ${cfg.groupsPerStep} tasks/step, target greedy success ${target} on ${seeds.length} held-out maps`,
);
const t0 = Date.now();
const worker = spawn(process.execPath, ["--import", "tsx", "workers/worker.ts", "--job", jobId!], { stdio: ["ignore", "pipe", "inherit"] });
worker.stdout.on("data", (b: Buffer) => {
  for (const line of b.toString().split("\n"))
    if (/greedy success|done|resumed|failed|target|ERROR/.test(line))
      console.log(`  ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s ${line.replace(/^\[[\w-]+\] /, "")}`);
});
// A SIGTERM alone is a graceful worker shutdown: it gives the job back to the queue (`queued`) for
// another worker to resume. The time limit is a cancel instead; SIGTERM only if the worker has not
// exited CANCEL_WAIT_MS after it (a shutdown releases a job that has a cancel request as canceled).
const CANCEL_WAIT_MS = 60_000;
const exited = new Promise((r) => worker.on("exit", r));
let killTimer: NodeJS.Timeout | undefined;
let deadlineHit = false;
const timer = setTimeout(() => {
  deadlineHit = true;
  console.log(`  ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s --max-minutes ${maxMinutes} reached: canceling run ${runId}`);
  requestCancel(jobId!).then(
    () => undefined,
    (e: unknown) => {
      if (!(e instanceof InvalidJobTransitionError)) console.error(`cancel request failed: ${e instanceof Error ? e.message : String(e)}`);
      // InvalidJobTransitionError: the job finished meanwhile (succeeded or failed), nothing to cancel
    },
  );
  killTimer = setTimeout(() => worker.kill("SIGTERM"), CANCEL_WAIT_MS);
}, maxMinutes * 60_000);
await exited;
clearTimeout(timer);
clearTimeout(killTimer);

// ---- read the stored curve: the first evaluation at or above the target
const evals = readSeries(runId, "eval/greedy_success", { maxPoints: 100_000 });
const startedAt = getRun(runId).startedAt;
const runStart = startedAt ? new Date(startedAt) : new Date(t0);
const hit = evals.values.findIndex((v) => v >= target);
const best = evals.values.length ? Math.max(...evals.values) : NaN;
const bestStep = evals.steps[evals.values.indexOf(best)];
const overlaps = readSeries(runId, "eval/train_overlap", { maxPoints: 100_000 }).values;
const run = getRun(runId);
console.log(`\n| policy | greedy success on ${seeds.length} held-out maps | time |`);
console.log(`| --- | --- | --- |`);
console.log(`| random admissible action | ${random.toFixed(3)} | - |`);
if (heuristic !== null) console.log(`| scripted "right if safe, else down" | ${heuristic.toFixed(3)} | - |`);
if (smarter !== null) console.log(`| scripted "first safe move of right, down, left, up, never straight back" | ${smarter.toFixed(3)} | - |`);
for (const { k, success } of lookahead ?? [])
  console.log(`| scripted "right or down, reading ${k} move${k > 1 ? "s" : ""} ahead" | ${success.toFixed(3)} | - |`);
if (bfs !== null) console.log(`| breadth-first search on the map (shortest path) | ${bfs.toFixed(3)} | - |`);
console.log(
  hit >= 0
    ? `| trained (${cfg.estimator}), first eval >= ${target} at step ${evals.steps[hit]} | ${evals.values[hit].toFixed(3)} | ${(evals.wallTimes[hit] - runStart.getTime() / 1000).toFixed(0)} s |`
    : evals.steps.length
      ? `| trained (${cfg.estimator}), did not reach ${target} in ${maxMinutes} min (last eval at step ${evals.steps.at(-1)}) | best ${best.toFixed(3)} (step ${bestStep}) | ${((Date.now() - t0) / 1000).toFixed(0)} s |`
      : `| trained (${cfg.estimator}), stopped after ${maxMinutes} min before its first evaluation | - | ${((Date.now() - t0) / 1000).toFixed(0)} s |`,
);
// the moment the run visibly learns: the first evaluation above the scripted rule
const beat = heuristic === null ? -1 : evals.values.findIndex((v) => v > heuristic);
if (heuristic !== null)
  console.log(
    beat >= 0
      ? `\nfirst eval above the scripted rule (${heuristic.toFixed(3)}): ${evals.values[beat].toFixed(3)} at step ${evals.steps[beat]}, ${(evals.wallTimes[beat] - runStart.getTime() / 1000).toFixed(0)} s (goal: under 180 s)`
      : `\nno eval above the scripted rule (${heuristic.toFixed(3)})`,
  );

// ---- throughput, from the per-step series the trainer stores (sums over the whole run)
const total = (key: string) => readSeries(runId, key, { maxPoints: 100_000 }).values.reduce((a, b) => a + b, 0);
const [turns, rollSecs, updSecs, stepSecs, samples, optSteps] = [
  "rollout/turns",
  "perf/rollout_seconds",
  "perf/update_seconds_total",
  "perf/step_seconds",
  "perf/num_samples",
  "perf/optimizer_steps",
].map(total);
const steps = readSeries(runId, "perf/step_seconds", { maxPoints: 100_000 }).values.length;
const per = (a: number, b: number) => (b > 0 ? (a / b).toFixed(1) : "n/a");
const share = (a: number) => (stepSecs > 0 ? `${((100 * a) / stepSecs).toFixed(0)}%` : "n/a");
console.log(
  `\nthroughput over ${steps} training steps: rollout ${per(turns, rollSecs)} turns/s; update ${per(samples, updSecs)} samples/s, ${per(optSteps, updSecs)} optimizer steps/s; ` +
    `${per(stepSecs, steps)} s a step (rollout ${share(rollSecs)}, update ${share(updSecs)}, held-out evaluation and credit the rest)`,
);
const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");
console.log(`load average (1, 5, 15 min) at start ${fmtLoad(loadAtStart)}, at end ${fmtLoad(os.loadavg())}; ${os.cpus().length} CPU(s)`);
console.log(`\nheld-out maps training drew, over ${overlaps.length} evaluations: max ${overlaps.length ? Math.max(...overlaps) : "n/a"} (must be 0)`);
console.log(
  `\nrun ${runId}: ${run.status}${deadlineHit ? ` (stopped by --max-minutes ${maxMinutes})` : ""}; ${evals.steps.length} evaluations; target ${hit >= 0 ? "reached" : "NOT reached"} (goal: under 600 s)`,
);
