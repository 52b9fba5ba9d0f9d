// A sweep launched from the form: 2 values of groupSize x 3 seeds of the baseline kind, run by the
// real worker; the sweep opens as its comparison grouped by grid point with its progress, and the
// difference of the two groups equals lib/stats on the values the export returns, at equal steps
// and at equal wall time; with three groups, the two picked. Also takes docs/screenshots/sweep-{launch,compare}-{light,dark}.png.
import { expect, test, type Page } from "@playwright/test";
import fs from "node:fs";
import { groupDifference, valueAtStep } from "../../lib/stats/group-difference";

const OUT = "docs/screenshots";
fs.mkdirSync(OUT, { recursive: true });

test.use({ viewport: { width: 1440, height: 1000 } });

async function fillSweep(page: Page) {
  await page.goto("/runs/new");
  await page.getByLabel("Environment").selectOption("frozenlake");
  // a 4x4 map: a random policy reaches the goal now and then, so the groups' values vary
  await page.locator("#env-size").fill("4");
  await page.locator("#run-name").fill("lake-gs");
  await page.locator("#job-episodes").fill("48");
  await page.locator("#job-episodesPerBatch").fill("12");
  await page.getByLabel("Launch as a sweep").check();
  await page.getByRole("button", { name: "+ vary a param" }).click();
  await page.getByLabel("Varied param 1").selectOption("groupSize");
  await page.getByLabel("Values of param 1").fill("2, 6");
  await page.getByLabel("Sweep seeds").fill("0-2");
  await expect(page.getByTestId("sweep-size")).toHaveText("2 values × 3 seeds = 6 runs");
}

test("launch a 2 x 3 sweep from the form and compare its two groups", async ({ page, request }) => {
  // a bad value is named before anything is sent
  await fillSweep(page);
  await page.getByLabel("Values of param 1").fill("2, 2");
  await expect(page.getByTestId("sweep-error")).toContainText("repeats the value 2");
  await expect(page.getByRole("button", { name: /Launch sweep/ })).toBeDisabled();
  await page.getByLabel("Values of param 1").fill("2, 6");
  for (const scheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await fillSweep(page);
    await expect(page.locator("html")).toHaveClass(scheme === "dark" ? /dark/ : /^(?!.*dark)/);
    await page.getByRole("button", { name: "Launch sweep (6 runs)" }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${OUT}/sweep-launch-${scheme}.png` });
  }

  await page.getByRole("button", { name: "Launch sweep (6 runs)" }).click();
  await page.waitForURL(/\/compare\?runs=.*&group=sweep.*&sweep=/);
  const progress = page.getByTestId("sweep-progress");
  await expect(progress).toContainText("Sweep lake-gs");
  await expect(progress).toContainText("groupSize={2, 6} × seeds 0, 1, 2 = 6 runs");
  // the real worker runs all six
  await expect(page.getByTestId("sweep-status-succeeded")).toContainText("6", { timeout: 90_000 });
  await expect(page.getByTestId("compare-group")).toHaveCount(2);
  await expect(page.getByTestId("compare-groups")).toContainText("groupSize=2 (3 runs)");
  await expect(page.getByTestId("compare-groups")).toContainText("groupSize=6 (3 runs)");
  await expect(page.getByTestId("compare-chart-eval/success_rate").locator("path.recharts-area-area")).toHaveCount(2, { timeout: 30_000 });

  // the panel's numbers against lib/stats on the exported values (scipy checks lib/stats: test/platform/sweeps.test.ts)
  const sweepId = new URL(page.url()).searchParams.get("sweep")!;
  const sweep = await (await request.get(`/api/v1/sweeps/${sweepId}`)).json();
  const metric = "eval/success_rate_cum";
  const exported = await Promise.all(
    sweep.runIds.map(async (id: string) => (await (await request.get(`/api/v1/runs/${id}/metrics/export?format=columnar&key=${metric}`)).json())[0]),
  );
  const panel = page.getByTestId("group-difference");
  await panel.getByLabel("Difference metric").selectOption(metric);
  const stats = panel.getByTestId("group-difference-stats");
  const last = Math.min(...exported.map((e) => e.steps.at(-1)));
  await expect(stats).toHaveAttribute("data-step", String(last));
  const at = (i: number) => ({ runId: sweep.runIds[i], value: valueAtStep(exported[i].steps, exported[i].values, last) });
  const want = groupDifference({ label: "groupSize=2", values: [0, 1, 2].map(at) }, { label: "groupSize=6", values: [3, 4, 5].map(at) });
  if (!want.ok) throw new Error(want.reason);
  // the values vary (else the statistics are NaN and the comparison below proves nothing)
  expect(Number.isFinite(want.welch.p) && want.a.std + want.b.std > 0).toBe(true);
  expect(Number(await stats.getAttribute("data-diff"))).toBeCloseTo(want.welch.diff, 10);
  expect(Number(await stats.getAttribute("data-ci-lo"))).toBeCloseTo(want.welch.ci95[0], 10);
  expect(Number(await stats.getAttribute("data-welch-p"))).toBeCloseTo(want.welch.p, 10);
  expect(Number(await stats.getAttribute("data-permutation-p"))).toBeCloseTo(want.permutation.p, 10);
  await expect(stats).toContainText("(exact, 20 splits)");

  for (const scheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.reload();
    await expect(page.locator("html")).toHaveClass(scheme === "dark" ? /dark/ : /^(?!.*dark)/);
    await panel.getByLabel("Difference metric").selectOption(metric);
    await expect(stats).toHaveAttribute("data-step", String(last));
    await expect(page.getByTestId("compare-chart-eval/success_rate").locator("path.recharts-area-area")).toHaveCount(2);
    await page.mouse.move(0, 0);
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: `${OUT}/sweep-compare-${scheme}.png` });
  }

  // equal wall time: the same panel at the longest time every run reached (these runs take well under a second)
  await panel.getByLabel("Difference at").selectOption("time");
  await expect(panel).toHaveAttribute("data-at", "time");
  await expect(panel).toContainText("every run ran at least");

  // more than two groups (by seed: three of two runs each): A and B are picked
  await panel.getByLabel("Difference at").selectOption("step");
  await page.getByLabel("Group by").selectOption("seed");
  await expect(page.getByTestId("compare-group")).toHaveCount(3);
  await panel.getByLabel("Group B").selectOption({ label: "seed=2" });
  await panel.getByLabel("Difference metric").selectOption(metric);
  const bySeed = groupDifference({ label: "seed=0", values: [0, 3].map(at) }, { label: "seed=2", values: [2, 5].map(at) });
  if (!bySeed.ok) throw new Error(bySeed.reason);
  await expect(panel.getByTestId("group-difference-group").last()).toContainText("B: seed=2");
  await expect(stats).toHaveAttribute("data-step", String(last));
  expect(Number(await stats.getAttribute("data-diff"))).toBeCloseTo(bySeed.welch.diff, 10);
  expect(Number(await stats.getAttribute("data-welch-p"))).toBeCloseTo(bySeed.welch.p, 10);
  await expect(stats).toContainText("(exact, 6 splits)");

  // the runs table shows each run's sweep point and opens the sweep
  await page.goto(`/runs?sweep=${sweepId}`);
  await expect(page.getByTestId("run-row")).toHaveCount(6);
  await expect(page.getByTestId("run-sweep").first()).toContainText("sweep · groupSize=");
  await page.getByTestId("run-sweep").first().click();
  await page.waitForURL(/\/compare\?runs=.*&sweep=/);
  await expect(page.getByTestId("sweep-progress")).toBeVisible();
});
