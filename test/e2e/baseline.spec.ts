// Launch a baseline run from the UI, watch it reach 100 %, see its success curve, open a trajectory.
import { expect, test, type Page } from "@playwright/test";
import fs from "node:fs";

const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
const shot = (page: Page, name: string) => page.screenshot({ path: `${ART}/${name}.png`, fullPage: true });

test("launch a baseline run and read its trajectories", async ({ page }) => {
  await page.goto("/runs");
  await expect(page.getByRole("heading", { name: "Runs" })).toBeVisible();
  await shot(page, "runs-empty");

  await page.getByRole("link", { name: "Launch run" }).click();
  await expect(page.getByRole("heading", { name: "Launch a run" })).toBeVisible();
  await page.getByLabel("Environment").selectOption("frozenlake");
  await page.locator("#run-name").fill("e2e-frozenlake-baseline");
  await page.locator("#job-episodes").fill("240");

  // Bad input is caught inline and nothing is launched.
  await page.locator("#job-groupSize").fill("0");
  await expect(page.getByTestId("error-groupSize")).toContainText("at least 1");
  await expect(page.getByRole("button", { name: "Launch run" })).toBeDisabled();
  await page.locator("#job-groupSize").fill("8");
  await shot(page, "launch-form");

  await page.getByRole("button", { name: "Launch run" }).click();
  await page.waitForURL(/\/runs\/[\w-]+$/);
  await expect(page.getByTestId("run-name")).toHaveText("e2e-frozenlake-baseline");

  // The worker picks it up; progress reaches 100 % and the run succeeds.
  await expect(page.getByTestId("progress-pct")).toHaveText("100 %", { timeout: 60_000 });
  await expect(page.getByTestId("status-badge")).toHaveText("succeeded", { timeout: 30_000 });
  const chart = page.getByTestId("chart-eval/success_rate");
  await expect(chart).toBeVisible();
  await expect(chart.locator("path.recharts-line-curve")).toHaveCount(1);
  await expect(page.getByTestId("job-log")).toContainText("done: success rate");
  await shot(page, "run-page");

  await page.getByRole("link", { name: "Trajectories", exact: true }).click();
  await expect(page.getByTestId("trajectory-tab").first()).toBeVisible();
  await page.getByTestId("trajectory-tab").nth(1).click();
  await expect(page.getByTestId("turn").first()).toBeVisible();
  await expect(page.getByTestId("turn").first()).toContainText("Observation");
  await shot(page, "trajectories");

  await page.goto("/runs");
  await expect(page.getByTestId("run-row")).toHaveCount(1);
  await shot(page, "runs-list");
});
