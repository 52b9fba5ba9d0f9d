// The run page of a finished train run draws every metric it lists, without being scrolled: a
// full-page capture once showed blank panels for perf/optimizer_steps, perf/rollout_seconds,
// perf/step_seconds, perf/tokens_per_s, perf/update_seconds, ... (their points were stored; the
// page had sent only its first 24 keys' points, in key order, and mounted the rest on scroll).
// Also: a key with nothing to draw in the view is one compact line, not an empty panel; a run
// with more points than the page's budget fills in its lazy charts by itself once finished.
// Screenshots (to look at): test/artifacts/run-charts-*.png.
import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import fs from "node:fs";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
let api: APIRequestContext;
const runs = { train: "", wide: "", seconds: "" };

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ playwright }) => {
  test.setTimeout(240_000);
  api = await playwright.request.newContext({ baseURL: BASE });
  // 4 steps of 2 tasks x G=4 (GiGPO); every step updates (zero advantages kept, whether or not an
  // untrained episode succeeds), so losses/* and the update's perf/* have points
  const r = await api.post("/api/v1/runs", {
    data: {
      jobKind: "train",
      name: "e2e-run-charts",
      config: {
        steps: 4,
        groupsPerStep: 2,
        groupSize: 4,
        evalInterval: 2,
        evalEpisodes: 8,
        checkpointInterval: 10,
        exportOnnx: false,
        threads: 1,
        dropZeroAdvantage: false,
      },
    },
  });
  expect(r.status(), await r.text()).toBe(201);
  runs.train = (await r.json()).id;

  // 40 keys x 400 steps: more than the page's points budget, so some charts are not in its HTML
  const imp = await api.post("/api/v1/runs/import", { data: { name: "e2e-run-charts-wide" } });
  const run = await imp.json();
  runs.wide = run.id;
  const steps = Array.from({ length: 400 }, (_, i) => i);
  const values = Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`wide/k${String(k).padStart(2, "0")}`, steps.map((s) => Math.sin(s / 20 + k) + k)]));
  const h = { "x-turnlens-write-key": run.writeKey };
  expect((await api.post(`/api/v1/runs/${run.id}/metrics`, { data: { steps, values }, headers: h })).ok()).toBe(true);
  expect((await api.post(`/api/v1/runs/${run.id}/finish`, { data: { status: "succeeded" }, headers: h })).ok()).toBe(true);

  // 30 points over 2.2 seconds of wall time (a smoke test's length)
  const sec = await (await api.post("/api/v1/runs/import", { data: { name: "e2e-run-charts-seconds" } })).json();
  runs.seconds = sec.id;
  const t0 = 1_780_000_000;
  const secSteps = Array.from({ length: 30 }, (_, i) => i);
  const secBody = { steps: secSteps, wallTimes: secSteps.map((i) => t0 + (2.2 * i) / 29), values: { "train/reward": secSteps.map((i) => i / 29) } };
  const sh = { "x-turnlens-write-key": sec.writeKey };
  expect((await api.post(`/api/v1/runs/${sec.id}/metrics`, { data: secBody, headers: sh })).ok()).toBe(true);
  expect((await api.post(`/api/v1/runs/${sec.id}/finish`, { data: { status: "succeeded" }, headers: sh })).ok()).toBe(true);

  await expect.poll(async () => (await (await api.get(`/api/v1/runs/${runs.train}`)).json()).status, { timeout: 200_000, intervals: [1000] }).toBe("succeeded");
});

test.afterAll(async () => {
  for (const id of Object.values(runs)) if (id) await api.delete(`/api/v1/runs/${id}`);
  await api.dispose();
});

/** Keys whose panel shows no drawn line or point (a placeholder, or an empty plot area). */
const blankPanels = (page: Page) =>
  page
    .locator('figure[data-testid^="chart-"]')
    .evaluateAll((figs) =>
      figs
        .filter((f) => !f.querySelector('path.chart-line[d^="M"], path.recharts-line-curve[d^="M"], .recharts-dot'))
        .map((f) => (f as HTMLElement).dataset.testid!.slice("chart-".length)),
    );

const keysOf = async (id: string) => ((await (await api.get(`/api/v1/runs/${id}/metrics`)).json()).keys as { key: string }[]).map((k) => k.key);

test("a finished train run's page draws every metric it lists, in its HTML and without scrolling", async ({ page, browser }) => {
  const keys = await keysOf(runs.train);
  expect(keys).toEqual(
    expect.arrayContaining(["perf/optimizer_steps", "perf/rollout_seconds", "perf/step_seconds", "perf/tokens_per_s", "perf/update_seconds"]),
  );
  expect(keys.length).toBeGreaterThan(24);

  // The server's HTML alone (no script runs): every chart drawn as its static first paint.
  const noJs = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1440, height: 1000 } });
  const bare = await noJs.newPage();
  await bare.goto(`${BASE}/runs/${runs.train}`);
  await expect(bare.locator('figure[data-testid^="chart-"]')).toHaveCount(keys.length);
  expect(await blankPanels(bare)).toEqual([]);
  await noJs.close();

  // In the browser, never scrolled: a full-page capture shows every panel drawn.
  await page.goto(`/runs/${runs.train}`);
  await expect(page.locator('figure[data-testid^="chart-"]')).toHaveCount(keys.length);
  await page.waitForLoadState("networkidle");
  expect(await blankPanels(page)).toEqual([]);
  await expect(page.getByTestId("chart-perf/optimizer_steps")).toContainText(/last \S+ @ \d+/);
  await page.screenshot({ path: `${ART}/run-charts-train.png`, fullPage: true });
});

test("a key with nothing to draw in the view is one compact line, not an empty panel", async ({ page }) => {
  // every held-out instance is kept out of training: eval/train_overlap is 0 throughout, nothing to draw on a log scale
  await page.goto(`/runs/${runs.train}?log=1`);
  await expect(page.getByTestId("no-points-key-eval/train_overlap")).toHaveText("eval/train_overlap (all 0 on a log scale)");
  await expect(page.getByTestId("chart-eval/train_overlap")).toHaveCount(0);
  await expect(page.getByTestId("chart-eval/heldout_instances")).toBeVisible();
  await page.waitForLoadState("networkidle");
  expect(await blankPanels(page)).toEqual([]);
  await page.screenshot({ path: `${ART}/run-charts-train-log.png`, fullPage: true });
});

test("a finished run with more points than the page sends fills in its other charts without being scrolled", async ({ page }) => {
  await page.goto(`/runs/${runs.wide}`);
  await expect(page.locator('figure[data-testid^="chart-"]')).toHaveCount(40);
  // the last charts start as placeholders (not in the HTML) and mount one per idle period after load
  await expect.poll(() => blankPanels(page), { timeout: 30_000 }).toEqual([]);
  await expect(page.getByTestId("chart-skeleton")).toHaveCount(0);
  await page.screenshot({ path: `${ART}/run-charts-wide.png`, fullPage: true });
});

test("a run of a few seconds on a wall-time axis reads 0.5s 1.0s 1.5s, not 0s 1s 1s 2s", async ({ page }) => {
  const labels = ["0.0s", "0.5s", "1.0s", "1.5s", "2.0s"];
  await page.goto(`/runs/${runs.seconds}?x=wall`);
  const chart = page.getByTestId("chart-train/reward");
  // the static first paint, then the interactive chart (on pointer) on the same ticks
  await expect(chart.locator('[data-axis="x"]')).toHaveText(labels);
  await chart.hover();
  await expect(chart.locator(".recharts-xAxis-tick-labels text")).toHaveText(labels);
  await chart.hover({ position: { x: 200, y: 90 } });
  await expect(chart.locator(".recharts-tooltip-wrapper")).toContainText(/wall time \d\.\ds · step \d+/);
  await chart.screenshot({ path: `${ART}/run-charts-wall-seconds.png` });
});
