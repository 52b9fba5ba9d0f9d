// The dashboard views in Chromium against the built app: runs table -> compare two runs grouped by
// estimator; credit over training -> a group's heatmap, GiGPO (stored) switched to GRPO shows the
// values lib/credit gives; a heatmap cell opens its turn; clone a run, change one parameter,
// launch. Test data comes in through the ingest API (imported GiGPO/GRPO runs), so nothing here
// depends on the training job. Everything created is deleted afterwards.
import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import fs from "node:fs";
import { runCredit } from "../../lib/credit";
import { fmtSigned } from "../../lib/charts/format";
import { groupDifference } from "../../lib/stats/group-difference";
import { creditGroups, curve, gigpoStep, GIGPO_PARAMS } from "../dashboard/fixtures";

const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
const shot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: `${ART}/${name}.png`, fullPage });
const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const TAG = "e2e-dash";

test.describe.configure({ mode: "serial" });

const STEPS = [0, 1, 2, 3].map((s) => gigpoStep(s, { groups: 3, G: 6, maxTurns: 8, seed: 11 }));
const runs: Record<string, string> = {};
/** each imported run's write key header (POST /runs/import returns it once) */
const keys: Record<string, Record<string, string>> = {};
let api: APIRequestContext;

// biome-ignore lint/suspicious/noExplicitAny: the API responses read here have many shapes, read field by field
async function ok<T = any>(p: Promise<{ ok(): boolean; status(): number; json(): Promise<T>; text(): Promise<string> }>): Promise<T> {
  const r = await p;
  if (!r.ok()) throw new Error(`HTTP ${r.status()}: ${await r.text()}`);
  return r.json();
}

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  const specs = [
    ["gigpo-lake-s0", "gigpo", 0, 3e-4, 0.85],
    ["gigpo-lake-s1", "gigpo", 1, 3e-4, 0.8],
    ["grpo-lake-s0", "grpo", 0, 1e-4, 0.55],
    ["grpo-lake-s1", "grpo", 1, 1e-4, 0.5],
  ] as const;
  for (const [name, est, seed, lr, ceiling] of specs) {
    const run = await ok(
      api.post("/api/v1/runs/import", {
        data: {
          name,
          project: `e2e-dash-${est}`,
          envId: "frozenlake",
          estimator: est,
          seed,
          tags: [TAG],
          config: { lr, seed, estimator: est, estimatorParams: est === "gigpo" ? GIGPO_PARAMS : {}, groupSize: 6, envConfig: { size: 4 } },
        },
      }),
    );
    runs[name] = run.id;
    keys[run.id] = { "x-turnlens-write-key": run.writeKey };
    await ok(api.post(`/api/v1/runs/${run.id}/metrics`, { data: { points: curve(80, seed + (est === "gigpo" ? 0 : 10), ceiling) }, headers: keys[run.id] }));
  }
  const g0 = runs["gigpo-lake-s0"];
  for (const s of STEPS) await ok(api.post(`/api/v1/runs/${g0}/steps`, { data: s, headers: keys[g0] }));
  for (const id of Object.values(runs)) await ok(api.post(`/api/v1/runs/${id}/finish`, { data: { status: "succeeded" }, headers: keys[id] }));
});

test.afterAll(async () => {
  // Delete every run this file made (launched ones once their job has finished).
  const list = await ok(api.get(`/api/v1/runs?tag=${TAG}&pageSize=100`));
  for (const r of list.runs as { id: string; status: string }[]) {
    for (let i = 0; i < 120 && (r.status === "queued" || r.status === "running"); i++) {
      await new Promise((res) => setTimeout(res, 500));
      r.status = (await ok(api.get(`/api/v1/runs/${r.id}`))).status;
    }
    await api.delete(`/api/v1/runs/${r.id}`);
  }
  await api.dispose();
});

async function cellValues(page: Page, testId: string): Promise<number[][]> {
  const cells = await page
    .getByTestId(testId)
    .locator('[data-testid="heatmap-cell"]')
    .evaluateAll((els) => els.map((e) => ({ r: Number(e.getAttribute("data-row")), c: Number(e.getAttribute("data-col")), v: e.getAttribute("data-value") })));
  const out: number[][] = [];
  for (const { r, c, v } of cells) {
    out[r] ??= [];
    out[r][c] = v === "" || v === null ? NaN : Number(v);
  }
  return out;
}

test("runs table: filter, select two runs and compare them grouped by estimator", async ({ page }) => {
  await page.goto(`/runs?tag=${TAG}`);
  await expect(page.getByTestId("run-row")).toHaveCount(4);
  await expect(page.getByTestId("runs-total")).toHaveText("4 runs");
  await shot(page, "runs-table");

  await page.getByLabel("Filter by estimator").selectOption("gigpo");
  await expect(page.getByTestId("run-row")).toHaveCount(2);
  await page.getByLabel("Filter by estimator").selectOption("");
  // two projects: each row names its own, and the project filter keeps one
  await expect(page.getByTestId("run-project").filter({ hasText: "e2e-dash-grpo" })).toHaveCount(2);
  await page.getByLabel("Filter by project").selectOption("e2e-dash-gigpo");
  await expect(page).toHaveURL(/project=e2e-dash-gigpo/);
  await expect(page.getByTestId("run-row")).toHaveCount(2);
  await expect(page.getByTestId("run-project")).toHaveText(["e2e-dash-gigpo", "e2e-dash-gigpo"]);
  await page.getByLabel("Filter by project").selectOption("");
  await expect(page.getByTestId("run-row")).toHaveCount(4);
  await page.getByLabel("Filter by config values").fill("lr<=0.0001");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("run-row")).toHaveCount(2);
  await expect(page).toHaveURL(/config=lr%3C%3D0.0001/);
  await page.getByLabel("Filter by config values").fill("");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("run-row")).toHaveCount(4);

  // sort by a summary metric (its column is there by default: outcome metrics first)
  await page.getByTitle("sort by the last value of rollout/success_rate").click();
  await expect(page).toHaveURL(/sort=metric%3Arollout%2Fsuccess_rate/);
  await expect(page.getByTestId("run-row").first()).toContainText("gigpo-lake");

  await page.getByLabel("Select gigpo-lake-s0 for comparison").check();
  await page.getByLabel("Select grpo-lake-s0 for comparison").check();
  await expect(page.getByTestId("selection-bar")).toContainText("2 selected");
  await page.getByRole("link", { name: "Compare 2" }).click();
  await page.waitForURL(/\/compare\?runs=/);
  await expect(page.getByRole("heading", { name: "Compare 2 runs" })).toBeVisible();
  await page.getByLabel("Group by").selectOption("estimator");
  await expect(page.getByTestId("compare-group")).toHaveCount(2);
  await expect(page.getByTestId("compare-groups")).toContainText("estimator=gigpo");
  await expect(page.getByTestId("compare-groups")).toContainText("estimator=grpo");
  const chart = page.getByTestId("compare-chart-rollout/success_rate");
  await expect(chart.locator("path.recharts-line-curve")).toHaveCount(2);
  const diff = page.getByTestId("config-diff");
  await expect(diff.locator('tr[data-differs="true"]', { hasText: "config.lr" })).toHaveCount(1);
  await expect(diff.locator('tr[data-differs="true"]', { hasText: "estimator" }).first()).toBeVisible();
  // one run per group: no difference of the groups to test
  await expect(page.getByTestId("group-difference")).toHaveCount(0);
  await shot(page, "compare-two");

  // all four runs over two seeds: the mean with a std band per estimator, smoothed
  await page.goto(`/compare?runs=${Object.values(runs).join(",")}&group=estimator&band=std&smooth=0.6`);
  await expect(page.getByTestId("compare-group")).toHaveCount(2);
  await expect(page.getByTestId("compare-groups")).toContainText("(2 runs)");
  await expect(page.getByTestId("compare-chart-rollout/success_rate").locator("path.recharts-area-area")).toHaveCount(2);
  await shot(page, "compare-grouped");

  // two groups of two: gigpo minus grpo at one step, from each run's stored value there (the
  // charts above are smoothed and downsampled; the panel reads neither)
  const panel = page.getByTestId("group-difference");
  await panel.getByLabel("Difference metric").selectOption("rollout/success_rate");
  const stats = panel.getByTestId("group-difference-stats");
  const expectAt = async (step: number) => {
    // each run's stored value at the step: the same curves beforeAll logged
    const at = (est: string, seed: number, ceiling: number) => curve(80, seed + (est === "gigpo" ? 0 : 10), ceiling)[step].values["rollout/success_rate"];
    const want = groupDifference(
      { label: "estimator=gigpo", values: [at("gigpo", 0, 0.85), at("gigpo", 1, 0.8)].map((value, i) => ({ runId: `g${i}`, value })) },
      { label: "estimator=grpo", values: [at("grpo", 0, 0.55), at("grpo", 1, 0.5)].map((value, i) => ({ runId: `r${i}`, value })) },
    );
    if (!want.ok) throw new Error(want.reason);
    await expect(stats).toHaveAttribute("data-step", String(step));
    for (const [attr, v] of [
      ["data-diff", want.welch.diff],
      ["data-ci-lo", want.welch.ci95[0]],
      ["data-ci-hi", want.welch.ci95[1]],
      ["data-welch-p", want.welch.p],
      ["data-permutation-p", want.permutation.p],
    ] as const)
      expect(Number(await stats.getAttribute(attr))).toBeCloseTo(v, 10);
    await expect(stats).toContainText(`A − B = ${want.welch.diff.toFixed(4)}`);
    await expect(stats).toContainText(`95 % CI [${want.welch.ci95[0].toFixed(4)}, ${want.welch.ci95[1].toFixed(4)}]`);
    await expect(stats).toContainText(`Welch p = ${want.welch.p < 1e-4 ? want.welch.p.toExponential(2) : want.welch.p.toFixed(4)}`);
    await expect(stats).toContainText(`permutation p = ${want.permutation.p.toFixed(4)} (exact, 6 splits)`);
  };
  // the default step: the last one all four runs reached
  await expectAt(79);
  await expect(panel.getByTestId("group-difference-group")).toHaveCount(2);
  await expect(panel.getByTestId("group-difference-group").first()).toContainText("n = 2");
  await panel.getByLabel("Difference step").fill("40");
  await expectAt(40);
  await panel.scrollIntoViewIfNeeded();
  await page.screenshot({ path: "/tmp/h22-group-difference.png" });
  await shot(page, "compare-group-difference");
});

test("a trainer's own estimator is named as not recomputable, and a NaN loss is named under its chart", async ({ page }) => {
  const run = await ok(api.post("/api/v1/runs/import", { data: { name: "verl-gae", project: "e2e-dash-verl", envId: "search", tags: [TAG] } }));
  const h = { "x-turnlens-write-key": run.writeKey };
  await ok(api.post(`/api/v1/runs/${run.id}/metrics`, { data: { steps: [0, 1, 2], values: { "train/loss": [0.9, "NaN", 0.7] } }, headers: h }));
  const step = { ...STEPS[0], estimator: "verl:gae", params: { trainer: { adv_estimator: "gae", lam: 0.95 }, note: "verl's GAE runs token by token" } };
  await ok(api.post(`/api/v1/runs/${run.id}/steps`, { data: step, headers: h }));
  await ok(api.post(`/api/v1/runs/${run.id}/finish`, { data: { status: "succeeded" }, headers: h }));
  await page.goto(`/runs/${run.id}`);
  await expect(page.getByTestId("non-finite")).toHaveText("1 non-finite value not drawn: NaN @ 1");
  await page.goto(`/runs/${run.id}/credit`);
  await expect(page.getByTestId("foreign-estimator")).toContainText("Trained with verl:gae, which TurnLens has no equivalent of");
  await shot(page, "credit-foreign-estimator");
});

test("credit: open a group's heatmap, switch GiGPO to GRPO and get lib/credit's values, open a turn from a cell", async ({ page }) => {
  const runId = runs["gigpo-lake-s0"];
  await page.goto(`/runs/${runId}?smooth=0.6`);
  await expect(page.getByTestId("chart-rollout/success_rate").locator("path.recharts-line-curve")).toHaveCount(2); // raw + smoothed
  await shot(page, "run-page-imported");
  await page.getByRole("link", { name: "Credit" }).click();
  await page.waitForURL(/\/credit$/);
  const overview = page.getByTestId("overview-heatmap");
  await expect(overview.locator('[data-testid="heatmap-cell"]').first()).toBeVisible();
  await expect(page.getByTestId("diag-singletonRatio").locator("path.recharts-line-curve")).toHaveCount(1);
  // the failure signals of an ingested run: length bias, group outcomes, reward variance, template collapse
  await expect(page.getByTestId("length-heatmap").locator('[data-testid="heatmap-cell"]').first()).toBeVisible();
  await expect(page.getByTestId("diag-outcomes").locator("path.recharts-line-curve")).toHaveCount(3);
  await expect(page.getByTestId("diag-rewardVariance").locator("path.recharts-line-curve")).toHaveCount(1);
  await expect(page.getByTestId("diag-collapse").locator("path.recharts-line-curve")).toHaveCount(2);
  await shot(page, "credit-overview");

  // a row of the step x turn heatmap opens that step's groups
  await overview.locator('[data-testid="heatmap-cell"][data-row="2"][data-col="0"]').click();
  await page.waitForURL(/\/credit\/group\?step=2/);
  const hm = page.getByTestId("heatmap-a");
  await expect(hm).toHaveAttribute("data-source", "stored");
  await expect(hm).toHaveAttribute("data-estimator", "gigpo");
  const groupId = await hm.getAttribute("data-group");
  const groups = (await ok(api.get(`/api/v1/runs/${runId}/steps/2/groups`))).groups as { id: string; uid: string }[];
  const uid = groups.find((g) => g.id === groupId)!.uid;
  const input = STEPS[2].groups.find((g) => g.uid === uid)!;
  const stored = await cellValues(page, "heatmap-a");
  expect(stored).toEqual(input.trajectories.map((t) => t.turns.map((u) => (u as { advantage: number }).advantage)));
  await expect(page.getByTestId("singleton-ratio")).toBeVisible();
  await shot(page, "heatmap-gigpo");

  // hover a start-state cell: every trajectory starts in the same state, so its anchor group has at least G members
  await hm.locator('[data-testid="heatmap-cell"][data-row="0"][data-col="0"]').hover();
  const tip = page.getByTestId("heatmap-tooltip");
  await expect(tip).toContainText("anchor group #0");
  const start = input.trajectories[0].turns[0].anchor;
  const members = input.trajectories.flatMap((t) => t.turns).filter((u) => u.anchor === start).length;
  expect(members).toBeGreaterThanOrEqual(input.trajectories.length);
  await expect(tip).toContainText(`${members} members`);
  await expect(tip).toContainText("frozen lake");
  await shot(page, "heatmap-hover", false);

  // switch to GRPO: recomputed on the server over the whole step, equal to lib/credit's values
  await page.getByTestId("pa-estimator").selectOption("grpo");
  await expect(hm).toHaveAttribute("data-estimator", "grpo");
  await expect(hm).toHaveAttribute("data-source", "recomputed");
  const want = runCredit({ estimator: "grpo", groups: creditGroups(STEPS[2]) })
    .trajectories.filter((t) => t.id.startsWith(`${uid}/`))
    .map((t) => t.advantages);
  const got = await cellValues(page, "heatmap-a");
  expect(got.length).toBe(want.length);
  got.forEach((row, i) => {
    row.forEach((v, j) => {
      expect(v).toBeCloseTo(want[i][j], 9);
    });
  });
  expect(got.flat()).not.toEqual(stored.flat());
  await expect(page).toHaveURL(/est=grpo/);
  await shot(page, "heatmap-grpo");

  // side by side with the stored GiGPO values, then their difference
  await page.getByTestId("pb-estimator").selectOption("stored");
  await expect(page.getByTestId("heatmap-b")).toHaveAttribute("data-source", "stored");
  await expect(hm).toHaveAttribute("data-view", "side");
  expect(await cellValues(page, "heatmap-b")).toEqual(stored);
  await shot(page, "heatmap-side-by-side");
  await page.getByRole("radio", { name: "difference (A − B)" }).click();
  await expect(hm).toHaveAttribute("data-view", "diff");
  const d = await cellValues(page, "heatmap-a");
  d.forEach((row, i) => {
    row.forEach((v, j) => {
      expect(v).toBeCloseTo(want[i][j] - stored[i][j], 9);
    });
  });
  await shot(page, "heatmap-difference");
  await page.getByTestId("pb-estimator").selectOption("none");
  await expect(page.getByTestId("heatmap-b")).toHaveCount(0);

  // GiGPO with another gamma, through the generated params form
  await page.getByTestId("pa-estimator").selectOption("gigpo");
  await expect(hm).toHaveAttribute("data-estimator", "gigpo");
  await page.getByRole("button", { name: "Edit parameters" }).click();
  await page.locator("#pa-gamma").fill("0.5");
  await page.getByRole("button", { name: "Recompute" }).click();
  await expect(page).toHaveURL(/gamma%22%3A0\.5/);
  const g5 = runCredit({ estimator: "gigpo", params: { ...GIGPO_PARAMS, gamma: 0.5 }, groups: creditGroups(STEPS[2]) })
    .trajectories.filter((t) => t.id.startsWith(`${uid}/`))
    .map((t) => t.advantages);
  await expect.poll(async () => (await cellValues(page, "heatmap-a"))[0][0]).toBeCloseTo(g5[0][0], 9);
  (await cellValues(page, "heatmap-a")).forEach((row, i) => {
    row.forEach((v, j) => {
      expect(v).toBeCloseTo(g5[i][j], 9);
    });
  });

  // back to GRPO, then a cell opens its turn in the trajectory browser
  await page.getByTestId("pa-estimator").selectOption("grpo");
  await expect(hm).toHaveAttribute("data-estimator", "grpo");
  await hm.locator('[data-testid="heatmap-cell"][data-row="1"][data-col="2"]').click();
  await page.waitForURL(/\/trajectories\?.*turn=2/);
  const turn = page.locator('[data-testid="turn"][data-highlight="true"]');
  await expect(turn).toContainText("Turn 3");
  await expect(turn.getByTestId("turn-recomputed")).toHaveText(fmtSigned(want[1][2]));
  await expect(turn.getByTestId("token-view")).toContainText(input.trajectories[1].turns[2].action.split(" ")[0]);
  await expect(page.locator('[role="tab"][aria-selected="true"]')).toContainText(`#1`);
  await shot(page, "trajectory-turn", false);
  await page.keyboard.press("j");
  await expect(page).toHaveURL(/turn=3/);
  await page.keyboard.press("l");
  await expect(page.locator('[role="tab"][aria-selected="true"]')).toContainText(`#2`);

  // keyboard on the heatmap, and the dark theme
  await page.goto(`/runs/${runId}/credit/group?step=2&group=${groupId}&est=grpo`);
  await page.getByRole("button", { name: "Toggle dark mode" }).click();
  await hm.getByRole("group").focus();
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowDown");
  await expect(page.getByTestId("heatmap-tooltip")).toContainText("turn 2");
  await shot(page, "heatmap-dark");
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/trajectories\?.*turn=1/);
  await expect(page.locator('[data-testid="turn"][data-highlight="true"]')).toContainText("Turn 2");
  await shot(page, "trajectory-dark", false);
  await page.getByRole("button", { name: "Toggle dark mode" }).click();
});

test("launch a cloned run with one parameter changed", async ({ page }) => {
  const src = await ok(
    api.post("/api/v1/runs", {
      data: { jobKind: "baseline", name: "e2e-clone-source", tags: [TAG], config: { envId: "frozenlake", episodes: 16, groupSize: 4, episodesPerBatch: 8 } },
    }),
  );
  await page.goto(`/runs/${src.id}`);
  await page.getByRole("link", { name: "Clone and edit" }).click();
  await page.waitForURL(/\/runs\/new\?from=/);
  await expect(page.getByRole("heading", { name: "Clone of e2e-clone-source" })).toBeVisible();
  await expect(page.locator("#job-episodes")).toHaveValue("16");
  await expect(page.locator("#job-groupSize")).toHaveValue("4");
  await page.locator("#job-episodes").fill("24");
  await shot(page, "clone-form");
  await page.getByRole("button", { name: "Launch run" }).click();
  await page.waitForURL((u) => /\/runs\/[\w-]+$/.test(u.pathname) && !u.pathname.endsWith(src.id));
  await expect(page.getByTestId("run-name")).toHaveText("e2e-clone-source-clone");
  const id = page.url().split("/").pop()!;
  const clone = await ok(api.get(`/api/v1/runs/${id}`));
  expect(clone.parentRunId).toBe(src.id);
  expect(clone.config).toMatchObject({ envId: "frozenlake", episodes: 24, groupSize: 4, episodesPerBatch: 8 });
  expect(clone.config.envConfig).toEqual(src.config.envConfig);
  await expect(page.getByTestId("status-badge")).toHaveText("succeeded", { timeout: 60_000 });
  await expect(page.getByRole("link", { name: "cloned from a run" })).toBeVisible();
  await shot(page, "clone-launched");

  // the launch form shows an estimator selector and its parameters for a job kind that takes one
  await page.goto("/runs/new");
  const kinds = await page.locator("#job-kind option").evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  if (kinds.includes("train")) {
    await page.locator("#job-kind").selectOption("train");
    await expect(page.getByTestId("estimator-section")).toBeVisible();
    await expect(page.locator("#estimator-select")).toHaveValue("gigpo");
    await expect(page.locator("#est-gamma")).toHaveValue("0.95");
    await page.locator("#estimator-select").selectOption("grpo");
    await expect(page.locator("#est-epsilon")).toBeVisible();
    await expect(page.locator("#est-gamma")).toHaveCount(0);
    await page.locator("#estimator-select").selectOption("gigpo");
    await page.locator("#est-gamma").fill("1.5");
    await expect(page.getByTestId("error-est-gamma")).toContainText("at most 1");
    await expect(page.getByRole("button", { name: "Launch run" })).toBeDisabled();
    await page.locator("#est-gamma").fill("0.9");
    await shot(page, "launch-train-estimator");
  }

  // an imported run clones into a draft with its environment carried over
  await page.goto(`/runs/new?from=${runs["grpo-lake-s0"]}`);
  await expect(page.getByRole("heading", { name: "Clone of grpo-lake-s0" })).toBeVisible();
  await expect(page.getByLabel("Environment")).toHaveValue("frozenlake");
  await expect(page.getByText("is an imported run")).toBeVisible();
});
