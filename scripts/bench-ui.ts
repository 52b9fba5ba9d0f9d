// npm run bench:ui — time until the dashboard has DRAWN, in Chromium, against the production build:
//   * the runs page with 10,000 runs (the first screen of rows),
//   * a run page with 20 charts (every chart's line drawn, as its static first paint or as the
//     interactive Recharts chart; the viewport is tall enough to show all 20, so lazy mounting
//     does not hide any work),
//   * the compare page of two runs over the 20 metric keys (every chart drawn, with its legend),
//   * a 64 x 50 credit heatmap of a run with 10^6 turns (all 3,200 cells), stored advantages and
//     recomputed under GRPO over the step's 10,000 turns,
//   * the token view of a 30-turn trajectory whose turns store 128 policy tokens each (3,840
//     tokens drawn, tinted by entropy).
// Time is measured in the page from navigation start (performance.now()) to the frame where the
// condition holds. Each page is opened once to warm the server, then REPEATS times in a fresh
// browser context (empty HTTP and query caches). Target: each under 1.5 s.
// Data: data/bench-ui.db from scripts/seed-bench-ui.ts (seeded on first use).
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import { chromium } from "@playwright/test";
import { BENCH_DB, BENCH_META, seedBenchUi, seedTokenViewRun, type BenchMeta } from "./seed-bench-ui";

const REPEATS = Number(process.env.BENCH_REPEATS ?? 5);
const TARGET_MS = 1500;
const PORT = Number(process.env.BENCH_PORT ?? 3191);

const meta: BenchMeta = fs.existsSync(BENCH_META) && fs.existsSync(BENCH_DB) ? JSON.parse(fs.readFileSync(BENCH_META, "utf8")) : await seedBenchUi();
if (!meta.tokenView) {
  // a database seeded before the token view case: migrate it and add that run only
  process.env.DATABASE_URL = `file:./${BENCH_DB}`;
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe" });
  meta.tokenView = await seedTokenViewRun();
  fs.writeFileSync(BENCH_META, JSON.stringify(meta, null, 2));
}
if (!fs.existsSync(".next/BUILD_ID"))
  execFileSync("node_modules/.bin/next", ["build"], { stdio: "inherit", env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });

const server = spawn("node_modules/.bin/next", ["start", "-H", "127.0.0.1", "-p", String(PORT)], {
  env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", DATABASE_URL: `file:./${BENCH_DB}` },
  stdio: "ignore",
});
const base = `http://127.0.0.1:${PORT}`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/api/v1/projects`)).ok) break;
  } catch {
    /* not up yet */
  }
  if (i > 300) throw new Error("server did not start");
  await new Promise((r) => setTimeout(r, 200));
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});

interface Case {
  name: string;
  /** screenshot saved to test/artifacts/<shot>.png after the measurements */
  shot: string;
  url: string;
  viewport: { width: number; height: number };
  /** runs in the page; returns true once drawn */
  drawn: string;
}

const hm = `/runs/${meta.turnsRun}/credit/group?step=${meta.heatmap.step}&group=${meta.heatmap.groupId}`;
const cells = meta.heatmap.rows * meta.heatmap.cols;
const cases: Case[] = [
  {
    name: `runs page (${meta.runs.toLocaleString()} runs)`,
    shot: "bench-runs",
    url: "/runs",
    viewport: { width: 1400, height: 900 },
    drawn: `document.querySelectorAll('[data-testid="run-row"]').length >= 15`,
  },
  {
    name: `run page, ${meta.chartKeys} charts x 10^5 points`,
    shot: "bench-run-20-charts",
    url: `/runs/${meta.chartRun}`,
    viewport: { width: 1400, height: 2600 },
    // every chart's line is on screen (the static first paint or the interactive Recharts chart)
    drawn: `[...document.querySelectorAll('figure[data-testid^="chart-"]')].filter((f) => f.querySelector('path.chart-line[d^="M"], path.recharts-line-curve')).length >= ${meta.chartKeys}`,
  },
  {
    // two runs overlaid on every key either logs (the 20-chart run's 10^5-point series, downsampled
    // by the API), in namespace sections with a legend per chart; tall enough to show every chart;
    // drawn as on the run page: the static first paint or the Recharts chart
    name: `compare page, 2 runs x ${meta.chartKeys} charts`,
    shot: "bench-compare",
    url: `/compare?runs=${meta.chartRun},${meta.turnsRun}`,
    viewport: { width: 1400, height: 3400 },
    drawn: `(() => { const f = [...document.querySelectorAll('figure[data-testid^="compare-chart-"]')]; return f.length >= ${meta.chartKeys} && f.every((x) => x.querySelector('path.chart-line[d^="M"], path.recharts-line-curve') && x.querySelector('[data-testid="legend-item"]')); })()`,
  },
  {
    name: `heatmap ${meta.heatmap.rows} x ${meta.heatmap.cols}, stored (run of ${meta.turns.toLocaleString()} turns)`,
    shot: "bench-heatmap-64x50",
    url: hm,
    viewport: { width: 1400, height: 1400 },
    drawn: `document.querySelectorAll('[data-testid="heatmap-a"][data-source="stored"] [data-testid="heatmap-cell"]').length >= ${cells}`,
  },
  {
    name: `heatmap ${meta.heatmap.rows} x ${meta.heatmap.cols}, recomputed with GRPO`,
    shot: "bench-heatmap-64x50-grpo",
    url: `${hm}&est=grpo`,
    viewport: { width: 1400, height: 1400 },
    drawn: `document.querySelectorAll('[data-testid="heatmap-a"][data-estimator="grpo"] [data-testid="heatmap-cell"]').length >= ${cells}`,
  },
  {
    name: `token view, ${meta.tokenView.turns} turns x ${meta.tokenView.tokensPerTurn} stored tokens`,
    shot: "bench-token-view",
    url: `/runs/${meta.tokenView.run}/trajectories?tint=entropy`,
    viewport: { width: 1400, height: 1400 },
    // every stored token of the opened trajectory is drawn, tinted (an inline background colour)
    drawn: `(() => { const t = document.querySelectorAll('[data-testid="token-view"] [data-token-id]'); return t.length >= ${meta.tokenView.turns * meta.tokenView.tokensPerTurn} && !!t[t.length - 1].style.background; })()`,
  },
];

async function measure(c: Case, shot = false): Promise<number> {
  const ctx = await browser.newContext({ viewport: c.viewport });
  const page = await ctx.newPage();
  await page.goto(base + c.url, { waitUntil: "commit" });
  const h = await page.waitForFunction(`(${c.drawn}) ? performance.now() : false`, null, { polling: "raf", timeout: 60_000 });
  const t = (await h.jsonValue()) as number;
  if (shot) {
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: `test/artifacts/${c.shot}.png` });
  }
  await ctx.close();
  return t;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const rows: { name: string; first: number; median: number; max: number; pass: boolean }[] = [];
// BENCH_ONLY=token-view: only the cases whose screenshot name contains it
for (const c of cases.filter((x) => !process.env.BENCH_ONLY || x.shot.includes(process.env.BENCH_ONLY))) {
  const first = await measure(c); // cold server caches (first request of this page)
  const xs: number[] = [];
  for (let i = 0; i < REPEATS; i++) xs.push(await measure(c, i === REPEATS - 1));
  rows.push({ name: c.name, first, median: pct(xs, 50), max: Math.max(...xs), pass: pct(xs, 50) < TARGET_MS });
}
await browser.close();
server.kill("SIGTERM");

console.log(`\nbench:ui — time to drawn in Chromium, ms (${REPEATS} runs each after one cold run; target < ${TARGET_MS} ms)\n`);
console.log("| page | cold | median | max | target |");
console.log("| --- | --- | --- | --- | --- |");
for (const r of rows) console.log(`| ${r.name} | ${r.first.toFixed(0)} | ${r.median.toFixed(0)} | ${r.max.toFixed(0)} | ${r.pass ? "ok" : "MISSED"} |`);
process.exit(rows.every((r) => r.pass) ? 0 : 1);
