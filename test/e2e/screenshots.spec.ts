// The screenshots in docs/screenshots/ (what a new user can look at before installing): the run,
// compare, credit, search and launch pages, light and dark, taken from the built app on imported runs.
import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import fs from "node:fs";
import { curve, gigpoStep } from "../dashboard/fixtures";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const OUT = "docs/screenshots";
const TAG = "e2e-shots";
fs.mkdirSync(OUT, { recursive: true });
let api: APIRequestContext;
const runs: Record<string, string> = {};

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  const specs = [
    ["gigpo-frozenlake-s0", "gigpo", 0, 0.85],
    ["gigpo-frozenlake-s1", "gigpo", 1, 0.8],
    ["grpo-frozenlake-s0", "grpo", 0, 0.55],
    ["grpo-frozenlake-s1", "grpo", 1, 0.5],
  ] as const;
  for (const [name, est, seed, ceiling] of specs) {
    const r = await api.post("/api/v1/runs/import", {
      data: {
        name,
        envId: "frozenlake",
        estimator: est,
        seed,
        tags: [TAG, "demo"],
        config: { lr: est === "gigpo" ? 3e-4 : 1e-4, seed, estimator: est, groupSize: 6 },
      },
    });
    expect(r.ok()).toBe(true);
    const run = await r.json();
    runs[name] = run.id;
    const h = { "x-turnlens-write-key": run.writeKey };
    const pts = curve(120, seed + (est === "gigpo" ? 0 : 10), ceiling).map((p) => ({
      ...p,
      values: {
        ...p.values,
        "eval/greedy_success": Math.min(1, p.values["rollout/success_rate"] * 1.05),
        "losses/policy_loss": 0.3 * Math.exp(-p.step / 50) + 0.02,
        "perf/step_s": 1.2 + (p.step % 7) / 20,
      },
    }));
    expect((await api.post(`/api/v1/runs/${run.id}/metrics`, { data: { points: pts }, headers: h })).ok()).toBe(true);
    if (name === "gigpo-frozenlake-s0")
      for (const s of [0, 1, 2, 3])
        expect((await api.post(`/api/v1/runs/${run.id}/steps`, { data: gigpoStep(s, { groups: 3, G: 6, maxTurns: 8, seed: 11 }), headers: h })).ok()).toBe(
          true,
        );
    expect((await api.post(`/api/v1/runs/${run.id}/finish`, { data: { status: "succeeded" }, headers: h })).ok()).toBe(true);
  }
});

test.afterAll(async () => {
  for (const id of Object.values(runs)) await api.delete(`/api/v1/runs/${id}`);
  await api.dispose();
});

async function both(page: Page, name: string, open: () => Promise<void>, fullPage = false) {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await open();
    await expect(page.locator("html")).toHaveClass(scheme === "dark" ? /dark/ : /^(?!.*dark)/);
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: `${OUT}/${name}-${scheme}.png`, fullPage });
    expect(fs.statSync(`${OUT}/${name}-${scheme}.png`).size).toBeGreaterThan(20_000);
  }
}

test.use({ viewport: { width: 1440, height: 1000 } });

test("run page", async ({ page }) => {
  await both(page, "run", async () => {
    await page.goto(`/runs/${runs["gigpo-frozenlake-s0"]}?smooth=0.6`);
    await expect(page.getByTestId("chart-rollout/success_rate").locator("path.chart-line, path.recharts-line-curve").first()).toBeVisible();
  });
});

test("compare page", async ({ page }) => {
  await both(page, "compare", async () => {
    await page.goto(`/compare?runs=${Object.values(runs).join(",")}&group=estimator&band=std&smooth=0.6`);
    await expect(page.getByTestId("compare-chart-rollout/success_rate").locator("path.recharts-area-area")).toHaveCount(2);
  });
});

test("credit page", async ({ page }) => {
  await both(page, "credit", async () => {
    await page.goto(`/runs/${runs["gigpo-frozenlake-s0"]}/credit/group`);
    await expect(page.locator('[data-testid="heatmap-cell"]').first()).toBeVisible();
  });
});

test("search page", async ({ page }) => {
  await both(page, "search", async () => {
    await page.goto(`/search?runs=${runs["gigpo-frozenlake-s0"]}&text=down&in=action&advantage=negative&sort=return`);
    await expect(page.getByTestId("search-hit").first()).toBeVisible();
  });
});

test("launch page", async ({ page }) => {
  await both(
    page,
    "launch",
    async () => {
      await page.goto("/runs/new");
      await page.locator("#job-kind").selectOption("train");
      await expect(page.getByRole("heading", { name: "Optimisation" })).toBeVisible();
    },
    true,
  ); // every section of the training form
});

test("import page", async ({ page }) => {
  // a verl dump of two steps with one malformed line, uploaded and imported by the worker
  const rows = [1, 2].flatMap((step) =>
    ["Solve 2+2.", "Solve 3*3.", "Solve 10-4."].flatMap((q, i) =>
      [0, 1, 2, 3].map((k) =>
        JSON.stringify({ input: q, output: `attempt ${k}`, gts: String([4, 9, 6][i]), score: (k + step + i) % 3 === 0 ? 1 : 0, step, acc: (k + i) % 2 }),
      ),
    ),
  );
  rows.splice(5, 0, '{"input": "Solve 5+5.", "output": "10", "score": ');
  const up = await api.post("/api/v1/imports?format=verl&project=e2e-shots&name=verl-gsm8k-dump&filename=rollouts.jsonl", {
    data: Buffer.from(rows.join("\n") + "\n"),
    headers: { "content-type": "application/octet-stream" },
  });
  expect(up.status()).toBe(201);
  const { id } = await up.json();
  let report: { runs: { runId: string }[] } | null = null;
  await expect
    .poll(
      async () => {
        const imp = await (await api.get(`/api/v1/imports/${id}`)).json();
        report = imp.report;
        return imp.job.status;
      },
      { timeout: 60_000 },
    )
    .toBe("succeeded");
  await both(
    page,
    "import",
    async () => {
      await page.goto(`/import?job=${id}`);
      await expect(page.getByTestId("import-report")).toBeVisible();
      await page.getByTestId("import-status").getByText("Log", { exact: true }).click(); // the job's log, as it was written
      await expect(page.getByTestId("job-log")).toContainText("done:");
    },
    true,
  );
  for (const r of report!.runs) await api.delete(`/api/v1/runs/${r.runId}`);
});
