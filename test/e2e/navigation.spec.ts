// Around the credit views: an unknown run answers 404 at once, the favicon is served,
// the empty Compare page has a heading, the trajectory browser opens on the first group with mixed
// outcomes, the runs table shows full metric names and lets you choose and resize columns, and
// Compare has the run page's namespace sections, a legend per chart, and a hover that highlights
// one run's line in every chart. Data comes in through the ingest API and is deleted afterwards.
import { expect, test, type APIRequestContext } from "@playwright/test";
import { curve, gigpoStep } from "../dashboard/fixtures";
import { fmt } from "../../lib/charts/format";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const TAG = "e2e-nav";
let api: APIRequestContext;
const runs: Record<string, string> = {};

test.describe.configure({ mode: "serial" });

/** A step whose first group has one outcome only (every trajectory fails), then mixed groups. */
function stepWithUniformFirstGroup() {
  const s = gigpoStep(0, { groups: 3, G: 6, maxTurns: 8, seed: 11 });
  const allFail = structuredClone(s.groups[0]);
  allFail.uid = "a-task-all-fail"; // groups list in natural uid order: this one first
  for (const t of allFail.trajectories) {
    t.success = false;
    for (const u of t.turns) Object.assign(u, { reward: 0, advantage: 0 });
  }
  s.groups.unshift(allFail);
  return s;
}

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  for (const [name, est, lr] of [
    ["nav-gigpo-with-a-long-descriptive-run-name-s0", "gigpo", 3e-4],
    ["nav-grpo-s0", "grpo", 1e-4],
  ] as const) {
    const r = await api.post("/api/v1/runs/import", {
      data: { name, envId: "frozenlake", estimator: est, tags: [TAG, "frozenlake-6x6", `lr-${lr}`], config: { lr } },
    });
    expect(r.ok()).toBe(true);
    const run = await r.json();
    runs[name] = run.id;
    const h = { "x-turnlens-write-key": run.writeKey };
    const pts = curve(40, est === "gigpo" ? 1 : 2, est === "gigpo" ? 0.8 : 0.5).map((p) => ({
      ...p,
      values: { ...p.values, "eval/success_rate_cum": p.values["rollout/success_rate"] * 0.9, "perf/step_s": 1.5 },
    }));
    expect((await api.post(`/api/v1/runs/${run.id}/metrics`, { data: { points: pts }, headers: h })).ok()).toBe(true);
    if (est === "gigpo") expect((await api.post(`/api/v1/runs/${run.id}/steps`, { data: stepWithUniformFirstGroup(), headers: h })).ok()).toBe(true);
    expect((await api.post(`/api/v1/runs/${run.id}/finish`, { data: { status: "succeeded" }, headers: h })).ok()).toBe(true);
  }
});

test.afterAll(async () => {
  for (const id of Object.values(runs)) await api.delete(`/api/v1/runs/${id}`);
  await api.dispose();
});

test("an unknown run answers 404 within 1 s, on every page of a run, with a way back", async ({ page }) => {
  await page.goto("/runs"); // warm the server
  for (const path of ["/runs/does-not-exist", "/runs/does-not-exist/credit", "/runs/does-not-exist/trajectories", "/no-such-page"]) {
    const t0 = Date.now();
    const res = await page.goto(path);
    const ms = Date.now() - t0;
    expect(res?.status(), path).toBe(404);
    expect(ms, `${path} took ${ms} ms`).toBeLessThan(1000);
    await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
  }
  // no client retries: the not-found page makes no API request for the run
  const calls: string[] = [];
  page.on("request", (r) => r.url().includes("/api/v1/runs/does-not-exist") && calls.push(r.url()));
  await page.goto("/runs/does-not-exist");
  await page.waitForTimeout(1500);
  expect(calls).toEqual([]);
  await page.getByRole("link", { name: "All runs" }).click();
  await page.waitForURL(/\/runs$/);
});

test("favicon is served and linked; no 404 on first load; the empty Compare page has a heading", async ({ page }) => {
  const failed: string[] = [];
  page.on("response", (r) => r.status() === 404 && failed.push(r.url()));
  await page.goto("/runs");
  await page.waitForLoadState("networkidle");
  expect(failed).toEqual([]);
  for (const p of ["/favicon.ico", "/favicon.svg"]) {
    const r = await api.get(p);
    expect(r.status(), p).toBe(200);
  }
  await expect(page.locator('link[rel="icon"][href^="/favicon.svg"]')).toHaveCount(1);
  await page.goto("/compare");
  await expect(page.getByRole("heading", { name: "Compare runs", level: 1 })).toBeVisible();
});

test("the trajectory browser opens on the first group with mixed outcomes; its step list is not cut off", async ({ page }) => {
  const step = stepWithUniformFirstGroup();
  const mixed = step.groups.filter((g) => g.trajectories.some((t) => t.success) && g.trajectories.some((t) => !t.success));
  expect(mixed.length).toBeGreaterThan(0); // the fixture has one, else this test proves nothing
  await page.goto(`/runs/${runs["nav-gigpo-with-a-long-descriptive-run-name-s0"]}/trajectories`);
  const items = page.getByTestId("group-item");
  await expect(items).toHaveCount(step.groups.length);
  await expect(items.first()).toContainText("a-task-all-fail");
  const current = page.locator('[data-testid="group-item"][aria-current="true"]');
  await expect(current).toContainText(mixed[0].uid);
  const rate = Number(await current.getAttribute("data-success-rate"));
  expect(rate).toBeGreaterThan(0);
  expect(rate).toBeLessThan(1);
  // the step select shows its whole option text
  const sel = page.locator("#step-select");
  const fits = await sel.evaluate((el: HTMLSelectElement) => {
    const probe = document.createElement("span");
    probe.style.cssText = `font:${getComputedStyle(el).font};white-space:nowrap;position:absolute;visibility:hidden`;
    probe.textContent = el.options[el.selectedIndex].text;
    document.body.append(probe);
    const w = probe.getBoundingClientRect().width;
    probe.remove();
    return w + 24 <= el.clientWidth; // text + the arrow
  });
  expect(fits).toBe(true);
});

test("runs table at 1440 px: full metric names, chosen columns, resizable, names and tags readable", async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`/runs?tag=${TAG}&cols=eval/success_rate_cum,rollout/success_rate`);
  await expect(page.getByTestId("run-row")).toHaveCount(2);
  // the two success rates are told apart: namespace shown, full key on hover
  const headers = page.getByTestId("metric-header");
  await expect(headers).toHaveCount(2);
  await expect(headers.nth(0)).toHaveAttribute("title", "eval/success_rate_cum");
  await expect(headers.nth(0)).toContainText("eval/");
  await expect(headers.nth(0)).toContainText("success_rate_cum");
  await expect(headers.nth(1)).toContainText("rollout/");
  // choose columns: add perf/step_s, remove rollout/success_rate
  await page.getByTestId("column-chooser").locator("summary").click();
  // (click, not check(): the box is controlled by the URL, which updates a tick after the click)
  const chooser = page.getByRole("group", { name: "Metric columns to show" });
  await chooser.getByLabel("perf/step_s").click();
  await expect(headers).toHaveCount(3);
  await expect(chooser.getByLabel("perf/step_s")).toBeChecked();
  await chooser.getByLabel("rollout/success_rate").click();
  await expect(headers).toHaveCount(2);
  await expect(chooser.getByLabel("rollout/success_rate")).not.toBeChecked();
  await expect(page).toHaveURL(/cols=eval%2Fsuccess_rate_cum%2Cperf%2Fstep_s/);
  await page.getByTestId("column-chooser").locator("summary").click();
  // resize a metric column by dragging its header's edge
  const h = headers.nth(0);
  const before = (await h.boundingBox())!.width;
  const handle = (await page.getByTestId("resize-eval/success_rate_cum").boundingBox())!;
  await page.mouse.move(handle.x + handle.width / 2, handle.y + handle.height / 2);
  await page.mouse.down();
  await page.mouse.move(handle.x + 80, handle.y + handle.height / 2, { steps: 5 });
  await page.mouse.up();
  // `?? 0`: a box is null until the element is laid out (after the reload below too); poll again then
  await expect.poll(async () => (await h.boundingBox())?.width ?? 0).toBeGreaterThan(before + 60);
  // the width survives a reload (localStorage)
  await page.reload();
  await expect.poll(async () => (await page.getByTestId("metric-header").nth(0).boundingBox())?.width ?? 0).toBeGreaterThan(before + 60);
  // the long run name and its tags are shown whole
  const row = page.getByTestId("run-row").filter({ hasText: "nav-gigpo" });
  const link = row.getByRole("link", { name: "nav-gigpo-with-a-long-descriptive-run-name-s0" });
  expect(await link.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
  const tags = row.getByTestId("run-tags");
  expect(await tags.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
  await expect(tags).toContainText("frozenlake-6x6");
  await page.screenshot({ path: "test/artifacts/runs-table-1440.png" });
});

test("compare: namespace sections in the run page's order, a legend per chart, hover highlights a run everywhere", async ({ page }) => {
  const ids = Object.values(runs);
  await page.goto(`/compare?runs=${ids.join(",")}`);
  const sections = page.locator('section[data-testid^="compare-section-"]');
  await expect(sections).toHaveCount(4);
  expect(await sections.evaluateAll((s) => s.map((x) => x.getAttribute("data-testid")))).toEqual(
    ["eval", "rollout", "credit", "perf"].map((n) => `compare-section-${n}`),
  );
  const chart = page.getByTestId("compare-chart-rollout/success_rate");
  const legend = chart.getByTestId("legend-item");
  await expect(legend).toHaveCount(2);
  await expect(legend.nth(0)).toContainText("nav-gigpo-with-a-long-descriptive-run-name-s0");
  await expect(legend.nth(1)).toContainText("nav-grpo-s0");
  // the legend's last value is the run's last logged value
  const last = curve(40, 1, 0.8).at(-1)!.values["rollout/success_rate"];
  await expect(legend.nth(0).getByTestId("legend-last")).toHaveText(fmt(last));
  // the static first paint is swapped for the interactive chart once the browser is idle
  await expect(chart.locator("path.recharts-line-curve")).toHaveCount(2);
  // hovering one legend entry highlights that run in every chart
  await legend.nth(1).hover();
  const lit = page.locator(`[data-testid="legend-item"][data-line="${runs["nav-grpo-s0"]}"][data-highlight="true"]`);
  const charts = await page.locator('figure[data-testid^="compare-chart-"]').count();
  await expect(lit).toHaveCount(charts);
  await expect(page.locator('[data-testid="legend-item"][data-highlight="true"]')).toHaveCount(charts);
  const widths = await chart.locator("path.recharts-line-curve").evaluateAll((ps) => ps.map((p) => Number(p.getAttribute("stroke-width"))));
  expect(widths.sort()).toEqual([1.7, 3]);
  await page.mouse.move(0, 0);
  await expect(page.locator('[data-testid="legend-item"][data-highlight="true"]')).toHaveCount(0);
});

test("credit over training has turn-level diagnostics: one line per turn index in each chart", async ({ page }) => {
  const step = stepWithUniformFirstGroup();
  const longest = Math.max(...step.groups.flatMap((g) => g.trajectories.map((t) => t.turns.length)));
  const lines = Math.min(longest, 5) + (longest > 5 ? 1 : 0);
  await page.goto(`/runs/${runs["nav-gigpo-with-a-long-descriptive-run-name-s0"]}/credit`);
  const section = page.getByTestId("turn-diagnostics");
  await expect(section).toBeVisible();
  await expect(section.getByRole("list", { name: "Turn indices" }).locator("li")).toHaveCount(lines);
  await expect(section.getByRole("list", { name: "Turn indices" }).locator("li").first()).toHaveText("turn 1");
  for (const k of ["creditShare", "meanAdvantage", "reach"]) await expect(page.getByTestId(`turn-diag-${k}`).locator(".recharts-line")).toHaveCount(lines);
  await page.screenshot({ path: "test/artifacts/turn-diagnostics.png", fullPage: true });
});
