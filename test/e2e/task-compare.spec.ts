// Two evaluations on the same held-out tasks, compared in Chromium: from Compare with two runs to
// the tasks the second newly solves and newly fails, and from a task to a trajectory of each run.
import { expect, test, type APIRequestContext } from "@playwright/test";
import fs from "node:fs";

const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
let api: APIRequestContext;
const ids: string[] = [];

/** An imported evaluation of 6 held-out tasks (seeds 500-505); `solved` lists the seeds it solves. */
async function evaluation(name: string, solved: number[]) {
  const r = await api.post("/api/v1/runs/import", { data: { name, project: "e2e-tasks", envId: "frozenlake" } });
  const run = await r.json();
  const h = { "x-turnlens-write-key": run.writeKey };
  const groups = [0, 1, 2, 3, 4, 5].map((k) => ({
    uid: `eval-${k}`,
    envId: "frozenlake",
    taskSeed: 500 + k,
    trajectories: [
      {
        success: solved.includes(500 + k),
        truncated: false,
        turns: [{ observation: `map ${k}`, action: "right", reward: solved.includes(500 + k) ? 1 : 0, valid: true, done: true }],
      },
    ],
  }));
  expect((await api.post(`/api/v1/runs/${run.id}/steps`, { data: { step: 0, groups }, headers: h })).status()).toBe(201);
  await api.post(`/api/v1/runs/${run.id}/finish`, { data: { status: "succeeded" }, headers: h });
  ids.push(run.id);
  return run.id as string;
}

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
});
test.afterAll(async () => {
  for (const id of ids) await api.delete(`/api/v1/runs/${id}`);
});

test("compare two evaluations task by task: newly solved, newly failed, links to both trajectories", async ({ page }) => {
  const a = await evaluation("ckpt-100", [500, 501, 502]);
  const b = await evaluation("ckpt-200", [501, 502, 503, 504]);
  await page.goto(`/compare?runs=${a},${b}`);
  await page.getByTestId("compare-tasks-link").click();
  await page.waitForURL(/\/compare\/tasks\?a=/);
  await expect(page.getByTestId("count-newlySolved")).toHaveText("2");
  await expect(page.getByTestId("count-newlyFailed")).toHaveText("1");
  await expect(page.getByTestId("count-persistentFailures")).toHaveText("1");
  await expect(page.getByTestId("count-stillSolved")).toHaveText("2");
  await expect(page.getByTestId("tasks-newlyFailed")).toContainText("seed 500");
  await page.screenshot({ path: `${ART}/compare-tasks.png`, fullPage: true });
  // B's trajectory of the regressed task opens in the trajectory browser
  await page.getByTestId("tasks-newlyFailed").getByRole("link", { name: "a failure" }).click();
  await page.waitForURL(new RegExp(`/runs/${b}/trajectories\\?traj=`));
  await expect(page.getByText("map 0").first()).toBeVisible();
});
