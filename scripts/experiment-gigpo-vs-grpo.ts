// npm run experiment:gigpo-vs-grpo — GRPO vs GiGPO on Sokoban, 5 seeds each, compared two ways:
//   equal rollouts: greedy success on the held-out levels after the same number of steps;
//   equal wall time: per seed, both runs cut at the same elapsed time (the shorter run's length),
//                    each scored by its last evaluation before that time.
// GRPO's update is cheaper (fewer turns with a non-zero advantage), so it trains for
// --grpo-factor times the steps; its equal-rollout score is read at the common step.
// Evaluation plays held-out instances training never drew (eval/train_overlap, reported, must be 0).
// The runs are stored like any other (tag experiment:gigpo-vs-grpo); the report, with Welch's
// t-test and an exact permutation test computed here, goes to docs/experiments/gigpo-vs-grpo.md.
//   flags: --steps 30  --grpo-factor 2  --seeds 5  --parallel 2  --eval-episodes 100
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { launchRun } from "../lib/runs/launch";
import { launchRunSchema } from "../lib/schemas/runs";
import { getRun } from "../lib/db/runs";
import { readSeries } from "../lib/db/metrics";
import { defaultConfig } from "../lib/envs/registry";
import type { SokobanConfig } from "../lib/envs/sokoban";
import { permutationTest, welchTTest } from "./stats";

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const STEPS = flag("steps", 30);
const GRPO_FACTOR = flag("grpo-factor", 2);
const SEEDS = flag("seeds", 5);
const PARALLEL = flag("parallel", 2);
const EVAL_EPISODES = flag("eval-episodes", 100);
const EVAL_INTERVAL = 10;
const ESTIMATORS = ["grpo", "gigpo"] as const;
type Est = (typeof ESTIMATORS)[number];
const TAG = "experiment:gigpo-vs-grpo";
if (STEPS % EVAL_INTERVAL !== 0) throw new Error(`--steps must be a multiple of ${EVAL_INTERVAL} (the evaluation interval)`);

// The Sokoban defaults: 6x6, one box, levels whose optimal solution takes at least 4 moves.
const envConfig = { ...(defaultConfig("sokoban") as SokobanConfig), maxTurns: 20 };
const base = {
  envId: "sokoban",
  envConfig,
  groupSize: 8,
  groupsPerStep: 16,
  evalInterval: EVAL_INTERVAL,
  evalEpisodes: EVAL_EPISODES,
  exportOnnx: false,
  lrDecayAfter: 0,
  threads: 1, // runs go PARALLEL at a time: one torch thread each
};
const stepsOf = (est: Est) => (est === "grpo" ? Math.round(STEPS * GRPO_FACTOR) : STEPS);

interface Planned {
  estimator: Est;
  seed: number;
  runId: string;
  jobId: string;
}
const planned: Planned[] = [];
// Seed by seed, GRPO and GiGPO side by side, so a pair shares the machine's load.
for (let seed = 0; seed < SEEDS; seed++)
  for (const estimator of ESTIMATORS) {
    const steps = stepsOf(estimator);
    const launch = launchRunSchema.parse({
      jobKind: "train",
      name: `${estimator}-sokoban-s${seed}`,
      tags: [TAG, estimator],
      config: { ...base, estimator, seed, steps, checkpointInterval: steps },
    });
    const { runId, jobId } = await launchRun(launch);
    planned.push({ estimator, seed, runId, jobId: jobId! });
  }
console.log(`${planned.length} runs (GiGPO ${stepsOf("gigpo")} steps, GRPO ${stepsOf("grpo")} steps), ${PARALLEL} at a time`);

const t0 = Date.now();
const queue = [...planned];
async function drain() {
  for (let p = queue.shift(); p; p = queue.shift()) {
    const started = Date.now();
    const w = spawn(process.execPath, ["--import", "tsx", "workers/worker.ts", "--job", p.jobId], { stdio: "ignore" });
    await new Promise((r) => w.on("exit", r));
    console.log(`  ${p.estimator} seed ${p.seed}: ${getRun(p.runId).status} in ${((Date.now() - started) / 1000).toFixed(0)} s (run ${p.runId})`);
  }
}
await Promise.all(Array.from({ length: PARALLEL }, drain));

// ---- the stored curves: greedy evaluations with their elapsed time since the run started
interface Curve {
  steps: number[];
  values: number[];
  elapsed: number[];
}
const curve = (p: Planned, key: string): Curve => {
  const s = readSeries(p.runId, key, { maxPoints: 100_000 });
  const start = Date.parse(getRun(p.runId).startedAt ?? "") / 1000;
  return { steps: s.steps, values: s.values, elapsed: s.wallTimes.map((w) => w - start) };
};
const evals = new Map(planned.map((p) => [p.runId, curve(p, "eval/greedy_success")]));
const atStep = (p: Planned, step: number) => {
  const c = evals.get(p.runId)!;
  const i = c.steps.lastIndexOf(step);
  return i >= 0 ? c.values[i] : NaN;
};
/** The last evaluation at or before `seconds` of the run. */
const atTime = (p: Planned, seconds: number) => {
  const c = evals.get(p.runId)!;
  let v = c.values[0] ?? NaN;
  let step = c.steps[0] ?? 0;
  c.elapsed.forEach((e, i) => {
    if (e <= seconds + 1e-6) {
      v = c.values[i];
      step = c.steps[i];
    }
  });
  return { v, step };
};
const totalSeconds = (p: Planned) => evals.get(p.runId)!.elapsed.at(-1) ?? NaN;
const overlap = (p: Planned) => Math.max(0, ...curve(p, "eval/train_overlap").values);
const tail = (p: Planned, key: string, k: number) => {
  const v = readSeries(p.runId, key, { maxPoints: 100_000 }).values.slice(0, STEPS).slice(-k);
  return v.reduce((a, b) => a + b, 0) / v.length;
};
const pair = (seed: number) => ({
  grpo: planned.find((p) => p.seed === seed && p.estimator === "grpo")!,
  gigpo: planned.find((p) => p.seed === seed && p.estimator === "gigpo")!,
});

const stats = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return { m, sd };
};
const fmt = (s: { m: number; sd: number }) => `${s.m.toFixed(3)} ± ${s.sd.toFixed(3)}`;

const seeds = Array.from({ length: SEEDS }, (_, s) => s);
const equalRollouts: Record<Est, number[]> = { grpo: [], gigpo: [] };
const equalTime: Record<Est, number[]> = { grpo: [], gigpo: [] };
const cutSteps: Record<Est, number[]> = { grpo: [], gigpo: [] };
const budgets: number[] = [];
for (const s of seeds) {
  const pr = pair(s);
  const budget = Math.min(totalSeconds(pr.grpo), totalSeconds(pr.gigpo));
  budgets.push(budget);
  for (const est of ESTIMATORS) {
    equalRollouts[est].push(atStep(pr[est], STEPS));
    const cut = atTime(pr[est], budget);
    equalTime[est].push(cut.v);
    cutSteps[est].push(cut.step);
  }
}
const rows = ESTIMATORS.map((est) => {
  const runs = planned.filter((p) => p.estimator === est);
  return {
    est,
    start: stats(runs.map((p) => atStep(p, 0))),
    rollouts: stats(equalRollouts[est]),
    time: stats(equalTime[est]),
    train: stats(runs.map((p) => tail(p, "rollout/success_rate", 10))),
    nonzero: stats(runs.map((p) => tail(p, "credit/nonzero_adv_share", STEPS))),
    secPerStep: stats(runs.map((p) => totalSeconds(p) / stepsOf(est))),
    overlap: Math.max(...runs.map(overlap)),
  };
});
const tests = {
  rollouts: { welch: welchTTest(equalRollouts.gigpo, equalRollouts.grpo), perm: permutationTest(equalRollouts.gigpo, equalRollouts.grpo) },
  time: { welch: welchTTest(equalTime.gigpo, equalTime.grpo), perm: permutationTest(equalTime.gigpo, equalTime.grpo) },
};
const verdict = (name: string, t: (typeof tests)["rollouts"]) => {
  const d = t.welch.diff;
  const sig = t.welch.p < 0.05 && t.perm.p < 0.05;
  return `${name}: GiGPO minus GRPO ${d >= 0 ? "+" : ""}${d.toFixed(3)} (Welch t = ${t.welch.t.toFixed(2)}, df = ${t.welch.df.toFixed(1)}, p = ${t.welch.p.toFixed(3)}; exact permutation p = ${t.perm.p.toFixed(3)}): ${
    sig ? `${d > 0 ? "GiGPO" : "GRPO"} is ahead at the 5 % level` : "no significant difference at the 5 % level"
  }.`;
};
const minutes = ((Date.now() - t0) / 60_000).toFixed(1);
const maxOverlap = Math.max(...rows.map((r) => r.overlap));
const md = `# GiGPO vs GRPO on Sokoban (tiny transformer, CPU)

Generated by \`npm run experiment:gigpo-vs-grpo -- --steps ${STEPS} --grpo-factor ${GRPO_FACTOR} --seeds ${SEEDS} --parallel ${PARALLEL} --eval-episodes ${EVAL_EPISODES}\`
on ${new Date().toISOString().slice(0, 10)} (${os.cpus().length} cores shared with other work, ${minutes} min wall time).
Runs are stored in the dashboard under the tag \`${TAG}\`.

## Set-up
Sokoban ${envConfig.width}x${envConfig.height}, ${envConfig.numBoxes} box, levels whose optimal solution takes at least ${envConfig.minSolutionMoves} moves
(BFS), at most ${envConfig.maxTurns} turns, RAGEN reward shaping (-0.1 per step, +1 box on target, +10 solved). Policy: the
default tiny transformer trained from scratch (2 layers, d_model 64, char tokens, prompt = the current grid),
sampling restricted to the four moves, 10 % epsilon exploration. ${base.groupsPerStep} tasks x G = ${base.groupSize} rollouts per step,
PPO-clip 0.2, 2 epochs, lr 3e-4, seeds 0..${SEEDS - 1}. Estimator defaults from lib/credit (GiGPO: gamma 0.95, omega 1, mean_std_norm).
GiGPO trains ${stepsOf("gigpo")} steps, GRPO ${stepsOf("grpo")} (its steps are cheaper); GRPO and GiGPO of one seed run side by side.

Greedy evaluation every ${EVAL_INTERVAL} steps on ${EVAL_EPISODES} held-out levels: distinct instances (by instance key) from the
evaluation seeds, and training redraws any seed whose level is held out. Held-out levels that training drew,
measured in every evaluation of every run (eval/train_overlap): **${maxOverlap}** (at most, over all runs and evaluations).

- **Equal rollouts**: greedy success at step ${STEPS} (the same ${STEPS} x ${base.groupsPerStep} x ${base.groupSize} episodes for both).
- **Equal wall time**: per seed, the budget is the shorter of the two runs' elapsed times
  (${budgets.map((b) => b.toFixed(0)).join(", ")} s); each run is scored by its last evaluation within it
  (steps reached: GRPO ${cutSteps.grpo.join(", ")}; GiGPO ${cutSteps.gigpo.join(", ")}).

## Result
| estimator | before training | equal rollouts (step ${STEPS}) | equal wall time | training success, last 10 of ${STEPS} steps | non-zero advantage share | s / step |
| --- | --- | --- | --- | --- | --- | --- |
${rows.map((r) => `| ${r.est} | ${fmt(r.start)} | ${fmt(r.rollouts)} | ${fmt(r.time)} | ${fmt(r.train)} | ${fmt(r.nonzero)} | ${fmt(r.secPerStep)} |`).join("\n")}

Mean ± standard deviation over ${SEEDS} seeds. Per seed, equal rollouts: ${ESTIMATORS.map((e) => `${e} ${equalRollouts[e].map((v) => v.toFixed(2)).join(", ")}`).join("; ")}.
Equal wall time: ${ESTIMATORS.map((e) => `${e} ${equalTime[e].map((v) => v.toFixed(2)).join(", ")}`).join("; ")}.

Tests (two-sided, computed by the script; the permutation test enumerates all ${SEEDS * 2}-choose-${SEEDS} splits of the seeds' scores):
- ${verdict("Equal rollouts", tests.rollouts)}
- ${verdict("Equal wall time", tests.time)}

The GiGPO paper reports GiGPO ahead of GRPO on ALFWorld and WebShop with LLM policies; this is a
small-budget check with a tiny model on a shared 2-core CPU, not a reproduction.

Runs: ${planned.map((p) => `[${p.estimator} s${p.seed}](/runs/${p.runId})`).join(", ")}.
`;
fs.mkdirSync("docs/experiments", { recursive: true });
fs.writeFileSync("docs/experiments/gigpo-vs-grpo.md", md);
console.log("\n" + md);
