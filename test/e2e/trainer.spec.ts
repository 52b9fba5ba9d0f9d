// The operator's own trainer launched from the dashboard: a server of its own (scripts/serve.sh: the
// built app and a worker) with the shipped templates (examples/trainers/trainers.json) and the
// client venv's python first on the worker's PATH. The TRL GRPO template (a tiny model, CPU) is
// launched from the form; its curves appear while it runs, then its trajectories and credit; a
// second launch is canceled from the page and leaves no trainer process.
// Screenshots: docs/screenshots/trainer-launch-*.png and trainer-run-*.png.
import { expect, test, type Page } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { type OwnServer, startServer, until } from "./own-server";

const VENV_BIN = path.resolve("node_modules/.turnlens-client-venv/bin");
const OUT = "docs/screenshots";
let server: OwnServer;

test.describe.configure({ mode: "serial" });
test.use({ viewport: { width: 1440, height: 1000 } });

test.beforeAll(async () => {
  test.skip(!fs.existsSync(path.join(VENV_BIN, "python3")), `no client venv at ${VENV_BIN} (scripts/test.sh installs TRL there)`);
  server = await startServer(
    { TURNLENS_TRAINERS: path.resolve("examples/trainers/trainers.json"), PATH: `${VENV_BIN}:${process.env.PATH}`, TURNLENS_WORKER_HEARTBEAT_MS: "300" },
    ["bash", "scripts/serve.sh"],
  );
});
test.afterAll(async () => {
  await server?.stop();
});

/** Processes running the example's script (procfs cmdlines). */
const trainerPids = () =>
  fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return fs.readFileSync(`/proc/${d}/cmdline`, "utf8").includes("trl_grpo_tiny.py");
      } catch {
        return false;
      }
    });

/** `open` navigates (the theme is applied at load): a screenshot of it in each scheme. */
async function both(page: Page, name: string, open: () => Promise<void>, fullPage = true) {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await open();
    await expect(page.locator("html")).toHaveClass(scheme === "dark" ? /dark/ : /^(?!.*dark)/);
    await page.screenshot({ path: `${OUT}/${name}-${scheme}.png`, fullPage });
  }
  await page.emulateMedia({ colorScheme: "light" });
}

async function fillForm(page: Page, name: string, steps: number) {
  await page.goto(`http://127.0.0.1:${server.port}/runs/new`);
  await page.locator("#job-kind").selectOption("trainer");
  await expect(page.locator("#trainer-template")).toHaveValue("trl-grpo-tiny");
  await page.locator("#run-name").fill(name);
  await page.locator("#param-params-steps").fill(String(steps));
}

test("launch the TRL GRPO template from the form: live curves, trajectories and credit in that run; cancel from the page", async ({ page }) => {
  test.setTimeout(300_000);
  await both(page, "trainer-launch", async () => {
    await fillForm(page, "e2e-trl-grpo", 8);
    await expect(page.getByTestId("trainer-description")).toContainText("TRL's GRPOTrainer");
  });
  await fillForm(page, "e2e-trl-grpo", 8);
  // a value out of the template's declaration is caught inline: nothing launched
  await page.locator("#param-params-num_generations").fill("1");
  await expect(page.getByRole("button", { name: "Launch run" })).toBeDisabled();
  await page.locator("#param-params-num_generations").fill("4");
  await expect(page.getByRole("button", { name: "Launch run" })).toBeEnabled();

  await page.getByRole("button", { name: "Launch run" }).click();
  await page.waitForURL(/\/runs\/(?!new$)[\w-]+$/);
  const runUrl = page.url();
  await expect(page.getByTestId("trainer-template")).toHaveText("trl-grpo-tiny");
  await expect(page.getByTestId("trainer-argv")).toHaveText("python3 trl_grpo_tiny.py --steps 8 --lr 0.001 --num-generations 4 --seed 0");

  // live: the reward curve is drawn while the trainer still runs
  const reward = page.getByTestId("chart-train/reward").locator("path.recharts-line-curve, path.chart-line");
  await expect(reward.first()).toBeVisible({ timeout: 150_000 });
  await expect(page.getByTestId("status-badge")).toHaveText("running");
  await expect(page.getByTestId("status-badge")).toHaveText("succeeded", { timeout: 120_000 });
  await expect(page.getByTestId("job-log")).toContainText("trained 8 GRPO steps");
  await both(
    page,
    "trainer-run",
    async () => {
      await page.goto(runUrl);
      await expect(reward.first()).toBeVisible();
      await expect(page.getByTestId("trainer-params")).toContainText("num_generations");
    },
    false,
  );

  await page.getByRole("link", { name: "Trajectories", exact: true }).click();
  await expect(page.getByTestId("trajectory-tab").first()).toBeVisible();
  await page.goto(`${runUrl}/credit`);
  await expect(page.getByTestId("overview-heatmap").locator('[data-testid="heatmap-cell"]').first()).toBeVisible();

  // Clone and edit: the form opens on the template with the run's params
  await page.goto(runUrl);
  await page.getByRole("link", { name: "Clone and edit" }).click();
  await expect(page.locator("#trainer-template")).toHaveValue("trl-grpo-tiny");
  await expect(page.locator("#param-params-steps")).toHaveValue("8");
  await expect(page.locator("#run-name")).toHaveValue("e2e-trl-grpo-clone");

  // a second launch, canceled from its page mid-run: no trainer process left within 10 s
  await fillForm(page, "e2e-trl-grpo-cancel", 10_000);
  await page.getByRole("button", { name: "Launch run" }).click();
  await page.waitForURL(/\/runs\/(?!new$)[\w-]+$/);
  await expect(page.getByTestId("status-badge")).toHaveText("running", { timeout: 60_000 });
  await until("the trainer process", () => trainerPids().length > 0, 30_000);
  await page.getByRole("button", { name: "Cancel" }).click();
  const t0 = Date.now();
  await until("no trainer process", () => trainerPids().length === 0, 10_000);
  expect(Date.now() - t0).toBeLessThan(10_000);
  await expect(page.getByTestId("status-badge")).toHaveText("canceled", { timeout: 15_000 });
});
