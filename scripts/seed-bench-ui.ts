// Seeds the UI benchmark's own database (data/bench-ui.db; never the demo or the dev database):
//   * 10,000 imported runs over several environments, estimators, tags and configs, each with a
//     few summary metrics (the runs table sorts and filters over all of them);
//   * one run with 20 metrics of 100,000 steps each (the "run page with 20 charts");
//   * one run with 10^6 turns: 100 training steps x 10,000 turns, every step with task groups of
//     G = 64 trajectories x 50 turns and repeated anchors, stored GiGPO advantages (the 64 x 50
//     heatmap);
//   * one run whose turns store their policy tokens (30-turn trajectories of 128 tokens each, with
//     ids, texts, log-probs and entropies: the token view).
// Writes data/bench-ui.json with the ids scripts/bench-ui.ts opens.
// Usage: node_modules/.bin/tsx scripts/seed-bench-ui.ts
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { RolloutStepInput } from "../lib/schemas/rollouts";

export const BENCH_DB = "data/bench-ui.db";
export const BENCH_META = "data/bench-ui.json";

export interface BenchMeta {
  runs: number;
  chartRun: string;
  chartKeys: number;
  turnsRun: string;
  turns: number;
  heatmap: { step: number; groupId: string; rows: number; cols: number };
  tokenView: TokenViewMeta;
}

export interface TokenViewMeta {
  run: string;
  turns: number;
  tokensPerTurn: number;
}

/** The token view's run: one step, 4 trajectories x 30 turns x 128 stored tokens (into the current DATABASE_URL). */
export async function seedTokenViewRun(): Promise<TokenViewMeta> {
  const { createRun, finishImportedRunRow } = await import("../lib/db/runs");
  const { writeRolloutStep } = await import("../lib/db/rollouts");
  const { checkpointWal } = await import("../lib/db/bulk-load");
  const { rolloutStepInputSchema } = await import("../lib/schemas/rollouts");
  const TURNS = 30;
  const TOK = 128;
  const run = createRun({
    project: "bench",
    name: "bench-token-view",
    kind: "imported",
    jobKind: null,
    config: {},
    envId: "sokoban",
    estimator: "grpo",
    status: "running",
  }).runId;
  const words = ["I", " should", " push", " the", " box", " left", ",", " then", " up", ".", " <", "action", ">", "left", "</", "action", ">", "\n"];
  const trajectories = Array.from({ length: 4 }, (_, t) => ({
    success: t % 2 === 0,
    turns: Array.from({ length: TURNS }, (_, i) => {
      const ids = Array.from({ length: TOK }, (_, k) => (t * 31 + i * 17 + k * 7) % words.length);
      const texts = ids.map((id) => words[id]);
      return {
        observation: `Turn ${i + 1}: the box is two cells left of the target.`,
        action: texts.join(""),
        reward: i === TURNS - 1 && t % 2 === 0 ? 1 : 0,
        advantage: t % 2 === 0 ? 0.8 : -0.8,
        tokenCount: TOK,
        tokenIds: ids.map((id) => 1000 + id),
        tokenTexts: texts,
        tokenLogprobs: ids.map((_, k) => -((k * 13 + i) % 40) / 10),
        tokenEntropies: ids.map((_, k) => ((k * 29 + t) % 30) / 10),
      };
    }),
  }));
  writeRolloutStep(run, rolloutStepInputSchema.parse({ step: 0, estimator: "grpo", groups: [{ uid: "task-0", envId: "sokoban", taskSeed: 0, trajectories }] }));
  finishImportedRunRow(run, "succeeded", new Date());
  checkpointWal();
  return { run, turns: TURNS, tokensPerTurn: TOK };
}

/**
 * Puts lib/credit's GiGPO advantages on every turn of a step's groups, as a trainer that trained
 * with GiGPO sends them (the stored advantages the credit views show); returns the diagnostics.
 */
export async function withGigpoAdvantages(groups: RolloutStepInput["groups"], params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { runCredit } = await import("../lib/credit");
  const res = runCredit({
    estimator: "gigpo",
    params,
    groups: groups.map((g) => ({
      uid: g.uid,
      trajectories: g.trajectories.map((t, i) => ({
        id: `${g.uid}/${i}`,
        turns: t.turns.map((u) => ({ reward: u.reward, anchor: u.anchor!, invalid: !u.valid })),
      })),
    })),
  });
  let k = 0;
  for (const g of groups)
    for (const t of g.trajectories) {
      const adv = res.trajectories[k++].advantages;
      t.turns.forEach((u, i) => {
        u.advantage = adv[i];
      });
    }
  return res.diagnostics as unknown as Record<string, unknown>;
}

export async function seedBenchUi(log: (s: string) => void = console.log): Promise<BenchMeta> {
  for (const f of [BENCH_DB, BENCH_DB + "-wal", BENCH_DB + "-shm", BENCH_META]) fs.rmSync(f, { force: true });
  process.env.DATABASE_URL = `file:./${BENCH_DB}`;
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe" });
  const { createRun, finishImportedRunRow } = await import("../lib/db/runs");
  const { writeMetrics } = await import("../lib/db/metric-writes");
  const { writeRolloutStep, listGroups } = await import("../lib/db/rollouts");
  const { checkpointWal } = await import("../lib/db/bulk-load");
  type Step = import("../lib/schemas/rollouts").RolloutStepInput;
  let t0 = performance.now();

  // ---- 10,000 runs with summary metrics
  const envs = ["sokoban", "frozenlake", "countdown", "webshop", "alfworld-lite", "twentyq"];
  const ests = ["grpo", "gigpo", "rloo", "drgrpo", "mapo", "igpo", "mars", "gae"];
  const N_RUNS = 10_000;
  const now = Date.now() / 1000 - N_RUNS * 60;
  for (let i = 0; i < N_RUNS; i++) {
    const env = envs[i % envs.length];
    const est = ests[(i * 7) % ests.length];
    const seed = i % 5;
    const { runId } = createRun({
      project: i % 10 === 0 ? "ablations" : "default",
      name: `${est}-${env}-lr${[1, 3, 10][i % 3]}e-5-s${seed}-${i}`,
      kind: "imported",
      jobKind: null,
      config: {
        lr: [1e-5, 3e-5, 1e-4][i % 3],
        groupSize: [4, 8, 16][i % 3],
        estimator: est,
        estimatorParams: { gamma: [0.9, 0.95, 1][i % 3] },
        envConfig: { size: 4 + (i % 4) },
      },
      envId: env,
      estimator: est,
      seed,
      tags: [`sweep-${i % 20}`, ...(i % 3 === 0 ? ["baseline"] : [])],
      status: "running",
    });
    const pts = [];
    for (let s = 0; s < 10; s++) {
      const w = now + i * 60 + s;
      pts.push({ key: "rollout/success_rate", step: s, value: ((((i * 37) % 100) / 100) * (s + 1)) / 10, wallTime: w });
      pts.push({ key: "rollout/return_mean", step: s, value: ((i * 53) % 100) / 20, wallTime: w });
      pts.push({ key: "credit/adv_std", step: s, value: 0.5 + ((i * 11) % 10) / 20, wallTime: w });
    }
    writeMetrics(runId, pts);
    // finished runs of every status, one in six still running (a spread the list's filters and sorts meet)
    const status = ["succeeded", "succeeded", "succeeded", "failed", "canceled", "running"][(i * 7919) % 6];
    if (status !== "running") finishImportedRunRow(runId, status, new Date((now + i * 60 + 10) * 1000));
    if (i % 2000 === 1999) log(`runs: ${i + 1}/${N_RUNS}`);
  }
  log(`10,000 runs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // ---- one run with 20 charts of 10^5 points each
  t0 = performance.now();
  const chartRun = createRun({
    project: "bench",
    name: "bench-20-charts",
    kind: "imported",
    jobKind: null,
    config: { lr: 1e-5 },
    envId: "sokoban",
    estimator: "gigpo",
    status: "running",
  }).runId;
  const KEYS = [
    ...["success_rate", "return_mean", "length_mean", "invalid_rate", "env_steps"].map((k) => `rollout/${k}`),
    ...["policy_loss", "kl", "entropy", "clip_frac", "grad_norm", "lr"].map((k) => `losses/${k}`),
    ...["adv_mean", "adv_std", "singleton_ratio", "zero_variance_share", "mean_abs_step"].map((k) => `credit/${k}`),
    ...["step_s", "rollout_s", "update_s", "tokens_per_s"].map((k) => `perf/${k}`),
  ];
  const STEPS = 100_000;
  for (let start = 0; start < STEPS; start += 5000) {
    const pts = [];
    for (let s = start; s < start + 5000; s++)
      for (let k = 0; k < KEYS.length; k++)
        pts.push({
          key: KEYS[k],
          step: s,
          value: KEYS[k] === "rollout/env_steps" ? (s + 1) * 512 : Math.sin(s / (2000 + k * 300)) + ((s * 7919 + k * 104729) % 1000) / 4000 + k,
          wallTime: 1.7e9 + s * 2.5,
        });
    writeMetrics(chartRun, pts);
  }
  log(`20 x 10^5 metric points in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // ---- one run with 10^6 turns
  t0 = performance.now();
  const turnsRun = createRun({
    project: "bench",
    name: "bench-1e6-turns",
    kind: "imported",
    jobKind: null,
    config: { lr: 1e-5, estimatorParams: { gamma: 0.95, omega: 1 } },
    envId: "sokoban",
    estimator: "gigpo",
    status: "running",
  }).runId;
  const G = 64;
  const T = 50;
  const grid = ["######", "#_P__#", "#_X__#", "#__O_#", "#____#", "######"];
  let turns = 0;
  for (let step = 0; step < 100; step++) {
    // 3 groups of 64 x 50 (9,600 turns) + one of 8 x 50: 10,000 turns per step
    const groups: Step["groups"] = [];
    for (let g = 0; g < 4; g++) {
      const n = g < 3 ? G : 8;
      groups.push({
        uid: `task-${step}-${g}`,
        envId: "sokoban",
        taskSeed: step * 10 + g,
        trajectories: Array.from({ length: n }, (_, t) => {
          const success = (t * 7 + g + step) % 5 === 0;
          return {
            success,
            truncated: !success,
            turns: Array.from({ length: T }, (_, i) => {
              const pos = (t * 3 + i * 5 + g) % 23;
              return {
                observation: `Turn ${i + 1}. Push the box X onto the target O.\n${grid.join("\n")}\nposition ${pos}`,
                action: ["up", "down", "left", "right"][(g + t + i) % 4],
                reward: i === T - 1 && success ? 10 : (t + i) % 11 === 0 ? -0.1 : 0,
                valid: (t + i * 3) % 17 !== 0,
                done: i === T - 1,
                anchor: `s${pos}`,
                tokenCount: 3,
              };
            }),
          };
        }),
      });
    }
    const diagnostics = await withGigpoAdvantages(groups, { gamma: 0.95, omega: 1 });
    turns += writeRolloutStep(turnsRun, { step, estimator: "gigpo", params: { gamma: 0.95, omega: 1 }, diagnostics, groups }).turns;
    if (step % 20 === 19) log(`turns: ${turns.toLocaleString()}`);
  }
  log(`${turns.toLocaleString()} turns in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const hmStep = 99;
  const groupId = listGroups(turnsRun, hmStep)[0].id;
  // both big runs are finished, like the runs one opens to study
  for (const run of [chartRun, turnsRun]) finishImportedRunRow(run, "succeeded", new Date());
  const tokenView = await seedTokenViewRun();
  checkpointWal();
  const meta: BenchMeta = {
    runs: N_RUNS + 3,
    chartRun,
    chartKeys: KEYS.length,
    turnsRun,
    turns,
    heatmap: { step: hmStep, groupId, rows: G, cols: T },
    tokenView,
  };
  fs.writeFileSync(BENCH_META, JSON.stringify(meta, null, 2));
  return meta;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const meta = await seedBenchUi();
  console.log(JSON.stringify(meta, null, 2));
}
