// A training run's page launches an evaluation of one of its checkpoints: pick the step, the number
// of held-out tasks and k, launch, land on the new run, see it finish with its greedy and pass@k curves.
import { expect, test, type APIRequestContext } from "@playwright/test";
import fs from "node:fs";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const TAG = "e2e-checkpoint-eval";
const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
let api: APIRequestContext;
/** runs this test created, deleted afterwards (the evaluation first) */
const created: string[] = [];

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
});

test.afterAll(async () => {
  for (const id of created.reverse()) await api.delete(`/api/v1/runs/${id}`);
  await api.dispose();
});

test("evaluate a checkpoint from the training run's page", async ({ page }) => {
  const r = await api.post("/api/v1/runs", {
    data: {
      jobKind: "train",
      name: "e2e-ckpt-source",
      tags: [TAG],
      config: {
        envConfig: { size: 3, maxTurns: 8 },
        steps: 2,
        groupsPerStep: 1,
        groupSize: 2,
        evalInterval: 1,
        evalEpisodes: 4,
        checkpointInterval: 1,
        threads: 1,
        exportOnnx: false,
      },
    },
  });
  expect(r.ok(), await r.text()).toBe(true);
  const train = await r.json();
  created.push(train.id);
  await page.goto(`/runs/${train.id}`);
  await expect(page.getByTestId("status-badge")).toHaveText("succeeded", { timeout: 90_000 });

  await page.getByTestId("evaluate-checkpoint").click();
  const form = page.getByRole("form", { name: "Evaluate a checkpoint" });
  await expect(form).toBeVisible();
  // the picker offers the run's checkpoints (steps 1 and 0) besides "latest"
  await expect(page.getByTestId("checkpoint-step").locator("option")).toHaveText(["latest", "step 1", "step 0"]);
  await page.getByTestId("checkpoint-step").selectOption("0");
  await page.getByTestId("checkpoint-episodes").fill("4");
  await page.getByTestId("checkpoint-sampled").check();
  // k out of range blocks the launch, in words
  await page.getByTestId("checkpoint-k").fill("0");
  await expect(form.getByRole("alert")).toContainText("k");
  await expect(form.getByRole("button", { name: "Launch evaluation" })).toBeDisabled();
  await page.getByTestId("checkpoint-k").fill("2");
  await page.screenshot({ path: `${ART}/checkpoint-eval-form.png`, fullPage: true });
  await form.getByRole("button", { name: "Launch evaluation" }).click();

  await page.waitForURL((u) => /\/runs\/[\w-]+$/.test(u.pathname) && !u.pathname.endsWith(train.id));
  const id = page.url().split("/").pop()!;
  created.push(id);
  const run = await (await api.get(`/api/v1/runs/${id}`)).json();
  expect(run).toMatchObject({ jobKind: "checkpoint-eval", kind: "eval", parentRunId: train.id });
  expect(run.config).toMatchObject({ sourceRunId: train.id, checkpointStep: 0, episodes: 4, greedy: true, sampled: true, k: 2 });
  await expect(page.getByTestId("status-badge")).toHaveText("succeeded", { timeout: 90_000 });
  await expect(page.getByTestId("chart-eval/greedy_success_cum")).toBeVisible();
  await expect(page.getByTestId("chart-eval/pass_at_2_cum")).toBeVisible();
  await expect(page.getByTestId("job-log")).toContainText("done: checkpoint of step 0");
  await page.screenshot({ path: `${ART}/checkpoint-eval-run.png`, fullPage: true });
});
