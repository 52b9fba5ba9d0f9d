// Alerts and failure clusters in Chromium, on a run imported through the API: its entropy
// collapses at step 40 (the default rule's alert appears on the runs list, linked to the run and
// to step 42's failed trajectories) and its failures follow two modes, the second from step 6 on
// (the run page's clusters panel shows both, the late one flagged "new"). Screenshots for
// docs/dashboard.md, light and dark.
import { expect, test, type APIRequestContext } from "@playwright/test";
import fs from "node:fs";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const OUT = "docs/screenshots";
let api: APIRequestContext;
let runId = "";
let writeKey = "";

test.describe.configure({ mode: "serial" });
test.use({ viewport: { width: 1440, height: 1000 } });

/** Step s: 4 tasks x 6 trajectories; failures loop on "look", and from step 6 half of them put the key in the wrong place. */
function step(s: number) {
  return {
    step: s,
    estimator: "grpo",
    groups: [0, 1, 2, 3].map((g) => ({
      uid: `task-${g}`,
      envId: "alfworld",
      taskSeed: g,
      trajectories: [0, 1, 2, 3, 4, 5].map((t) => {
        const win = t < 2;
        const misplace = !win && s >= 6 && t % 2 === 0;
        const actions = win
          ? [`go to drawer ${g}`, `open drawer ${g}`, `take key ${g} from drawer ${g}`, "go to desk 1", "put key in desk 1"]
          : misplace
            ? [`go to drawer ${g}`, `open drawer ${g}`, `take key ${g} from drawer ${g}`, `go to sofa ${t}`, `put key in sofa ${t}`]
            : ["look", "look", t % 3 ? "inventory" : "look", "look", "look"];
        return {
          success: win,
          turns: actions.map((action, k) => ({
            observation: `Task ${g}: put the key in the desk. You are in a room. (turn ${k})`,
            action,
            reward: win && k === actions.length - 1 ? 1 : 0,
            advantage: win ? 1 : -0.5,
          })),
        };
      }),
    })),
  };
}

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  const r = await api.post("/api/v1/runs/import", { data: { project: "e2e-alerts", name: "grpo-alfworld-collapse", envId: "alfworld", estimator: "grpo" } });
  expect(r.ok()).toBe(true);
  const run = await r.json();
  runId = run.id;
  writeKey = run.writeKey;
  const h = { "x-turnlens-write-key": run.writeKey };
  const steps = Array.from({ length: 60 }, (_, s) => s);
  const values = {
    "actor/entropy": steps.map((s) => (s >= 40 ? 0.12 : 1.1 - s * 0.002)),
    "rollout/success_rate": steps.map((s) => Math.min(0.6, 0.2 + s * 0.01)),
  };
  expect((await api.post(`/api/v1/runs/${runId}/metrics`, { data: { steps, values }, headers: h })).ok()).toBe(true);
  for (let s = 0; s < 10; s++) expect((await api.post(`/api/v1/runs/${runId}/steps`, { data: step(s), headers: h })).ok()).toBe(true);
});

// the run and its alerts go, so the other specs' runs list shows none of them
test.afterAll(async () => {
  await api.post(`/api/v1/runs/${runId}/finish`, { data: { status: "succeeded" }, headers: { "x-turnlens-write-key": writeKey } });
  expect((await api.delete(`/api/v1/runs/${runId}`)).ok()).toBe(true);
  expect((await (await api.get(`/api/v1/alerts?runId=${runId}`)).json()).alerts).toEqual([]);
  await api.dispose();
});

test("an alert on the runs list links to its run and to the step's failed trajectories", async ({ page }) => {
  // evaluated after ingest answered: poll the API until it is there
  await expect
    .poll(async () =>
      ((await (await api.get(`/api/v1/alerts?runId=${runId}`)).json()).alerts as { ruleId: string; step: number }[]).map((a) => `${a.ruleId}@${a.step}`),
    )
    .toContain("entropy-falling@42");
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto("/runs");
    const row = page.getByTestId("recent-alerts").getByTestId("alert-row").filter({ hasText: "grpo-alfworld-collapse" }).filter({ hasText: "Entropy falling" });
    await expect(row).toBeVisible();
    await expect(row.getByRole("link", { name: /^step 42/ })).toHaveAttribute("href", `/runs/${runId}/trajectories?step=42&outcome=failure`);
    await expect(page.getByTestId("run-row").first()).toBeVisible();
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: `${OUT}/alerts-${scheme}.png` });
  }
  await page.getByTestId("recent-alerts").getByRole("link", { name: "grpo-alfworld-collapse" }).first().click();
  await expect(page.getByTestId("run-alerts").getByTestId("alert-row").first()).toContainText("actor/entropy");
});

test("the clusters panel separates the two failure modes and flags the late one", async ({ page }) => {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`/runs/${runId}`);
    const panel = page.getByTestId("failure-clusters");
    await expect(panel.getByTestId("failure-cluster")).toHaveCount(2);
    const loop = panel.getByTestId("failure-cluster").filter({ hasText: "look > look" });
    const misplace = panel.getByTestId("failure-cluster").filter({ hasText: "sofa #" });
    // 16 failures a step (4 tasks x 4), all 10 steps read: 8 a step misplace from step 6 (32), the rest loop (128)
    await expect(loop.locator("span").first()).toHaveText("128");
    await expect(misplace.locator("span").first()).toHaveText("32");
    await expect(misplace.getByTestId("cluster-flag")).toHaveText("new");
    await expect(loop.getByTestId("cluster-flag")).toHaveCount(0);
    await panel.scrollIntoViewIfNeeded();
    await page.waitForLoadState("networkidle");
    await panel.screenshot({ path: `${OUT}/failure-clusters-${scheme}.png` });
    expect(fs.statSync(`${OUT}/failure-clusters-${scheme}.png`).size).toBeGreaterThan(5_000);
  }
  // an example opens its trajectory
  await page.getByTestId("failure-cluster").filter({ hasText: "sofa #" }).getByRole("link").first().click();
  await expect(page).toHaveURL(/\/trajectories\?step=\d+&group=.+&traj=/);
});
