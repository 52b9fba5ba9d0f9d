// Trajectory search in Chromium: a search given by its URL lists exactly the trajectories that
// match (text in an action, a per-turn advantage condition) and opens one beside its credit
// heatmap; a click on a curve's point opens the trajectories of that step.
import { expect, test, type APIRequestContext } from "@playwright/test";
import fs from "node:fs";

const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
let api: APIRequestContext;
let runId = "";

/**
 * Four steps of 2 groups x 3 trajectories of 3 turns. Trajectory k of a group searches for the
 * laptop at turn 1 when k is 0 or 1; turn 1's advantage is negative when k is 1 or 2. So per step
 * exactly 2 trajectories (k = 1, both groups) have "laptop" in an action AND a negative advantage at turn 1.
 */
test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  const run = await (await api.post("/api/v1/runs/import", { data: { name: "e2e-search", project: "e2e-search", envId: "alfworld" } })).json();
  runId = run.id;
  const h = { "x-turnlens-write-key": run.writeKey };
  for (const step of [0, 1, 2, 3]) {
    const groups = [0, 1].map((g) => ({
      uid: `s${step}-task${g}`,
      envId: "alfworld",
      taskSeed: 100 + g,
      trajectories: [0, 1, 2].map((k) => ({
        success: k === 0,
        truncated: false,
        turns: [0, 1, 2].map((i) => ({
          observation: `You are in the middle of a room. Looking around you see desk ${g + 1} and shelf ${i}.`,
          action: i === 1 ? (k < 2 ? "search[laptop]" : "go to shelf 1") : "look",
          reward: i === 2 && k === 0 ? 1 : 0,
          valid: true,
          done: i === 2,
          advantage: i === 1 && k > 0 ? -0.5 : 0.25,
        })),
      })),
    }));
    expect((await api.post(`/api/v1/runs/${runId}/steps`, { data: { step, groups, estimator: "grpo" }, headers: h })).status()).toBe(201);
  }
  const steps = [0, 1, 2, 3];
  expect(
    (await api.post(`/api/v1/runs/${runId}/metrics`, { data: { steps, values: { "rollout/success_rate": [0.2, 0.3, 0.3, 0.33] } }, headers: h })).ok(),
  ).toBe(true);
  expect((await api.post(`/api/v1/runs/${runId}/finish`, { data: { status: "succeeded" }, headers: h })).ok()).toBe(true);
});
test.afterAll(async () => {
  if (runId) await api.delete(`/api/v1/runs/${runId}`);
});

test("a search from the URL lists exactly the matching trajectories and opens one with its credit heatmap", async ({ page }) => {
  await page.goto(`/search?runs=${runId}&text=laptop&in=action&advantage=negative&minTurn=1&maxTurn=1&sort=step&order=asc`);
  const hits = page.getByTestId("search-hit");
  await expect(hits).toHaveCount(8); // 2 a step x 4 steps
  await expect(page.getByTestId("search-summary")).toContainText("8 trajectories");
  await expect(hits.first()).toContainText("failure");
  await expect(hits.first().locator("td").nth(1)).toHaveText("0"); // ascending steps
  await expect(hits.first().locator("td").nth(7)).toHaveText("t2"); // the matched turn: index 1, the second
  await expect(page.getByLabel("minTurn")).toHaveValue("2"); // shown from 1, as the trajectory browser numbers turns
  // the form shows the URL's query
  await expect(page.getByLabel("text")).toHaveValue("laptop");
  await expect(page.getByLabel("advantage", { exact: true })).toHaveValue("negative");
  await page.screenshot({ path: `${ART}/search-results.png`, fullPage: true });

  // a phrase that is not in any action: nothing
  await page.getByLabel("text").fill('"go to laptop"');
  await page.getByRole("button", { name: "Search" }).click();
  await expect(page).toHaveURL(/text=%22go\+to\+laptop%22|text=%22go%20to%20laptop%22/);
  await expect(page.getByTestId("search-summary")).toContainText("No trajectory matches");
  await page.goBack();
  await expect(hits).toHaveCount(8);

  await hits
    .first()
    .getByRole("link", { name: /turns & credit/ })
    .click();
  await expect(page).toHaveURL(new RegExp(`/runs/${runId}/trajectories\\?step=0&group=`));
  await expect(page.getByText("search[laptop]").first()).toBeVisible();
  await page.screenshot({ path: `${ART}/search-open-trajectory.png`, fullPage: true });
});

test("a click on a curve's point opens the trajectories of that step", async ({ page }) => {
  await page.goto(`/runs/${runId}`);
  const chart = page.getByTestId("chart-rollout/success_rate");
  await expect(chart).toBeVisible();
  const plot = chart.locator("div.h-44");
  await plot.hover(); // the interactive chart mounts on pointer enter
  await expect(chart.locator(".recharts-surface")).toBeVisible();
  const box = (await plot.boundingBox())!;
  // the right edge of the plot area: the last point, step 3
  await page.mouse.move(box.x + box.width - 12, box.y + box.height / 2);
  await page.mouse.click(box.x + box.width - 12, box.y + box.height / 2);
  await expect(page).toHaveURL(new RegExp(`/search\\?runs=${runId}&step=3`));
  await expect(page.getByTestId("search-hit")).toHaveCount(6);
  for (const cell of await page.getByTestId("search-hit").locator("td:nth-child(2)").allTextContents()) expect(cell).toBe("3");
  await page.screenshot({ path: `${ART}/search-from-chart.png`, fullPage: true });
});
