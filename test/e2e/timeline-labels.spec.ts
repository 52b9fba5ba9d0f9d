// One task across training and labels, in Chromium: label a trajectory and a turn from the keyboard
// in the trajectory view (with a note), find it by its label in the search, open its task's timeline
// from the hit, move the step slider, pick two trajectories and see them side by side with the
// differing turns marked; the run page's labels-per-step curve. Screenshots (light and dark) of the
// timeline and the labelled trajectory go to docs/screenshots.
import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import fs from "node:fs";
import { gigpoStep } from "../dashboard/fixtures";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const PROJECT = "e2e-timeline";
const OUT = "docs/screenshots";
fs.mkdirSync(OUT, { recursive: true });
let api: APIRequestContext;
const ids: string[] = [];

/** A run of 4 steps in which the same 3 tasks (lake-0..2) recur, with stored GiGPO advantages. */
async function run(name: string, seed: number) {
  const r = await api.post("/api/v1/runs/import", { data: { name, project: PROJECT, envId: "frozenlake", estimator: "gigpo" } });
  const created = await r.json();
  const h = { "x-turnlens-write-key": created.writeKey };
  for (const s of [0, 1, 2, 3]) {
    const step = gigpoStep(s, { groups: 3, G: 6, maxTurns: 8, seed });
    step.groups.forEach((g, i) => {
      Object.assign(g, { uid: `lake-${i}`, taskSeed: 700 + i });
    });
    expect((await api.post(`/api/v1/runs/${created.id}/steps`, { data: step, headers: h })).status()).toBe(201);
  }
  await api.post(`/api/v1/runs/${created.id}/finish`, { data: { status: "succeeded" }, headers: h });
  ids.push(created.id);
  return created.id as string;
}

test.describe.configure({ mode: "serial" });
let runA = "";
let runB = "";
test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  runA = await run("timeline-a", 3);
  runB = await run("timeline-b", 4);
});
test.afterAll(async () => {
  for (const id of ids) await api.delete(`/api/v1/runs/${id}`);
  const labels = (await (await api.get(`/api/v1/labels?project=${PROJECT}`)).json()).labels as { id: string }[];
  for (const l of labels) await api.delete(`/api/v1/labels/${l.id}`);
});

async function shots(page: Page, name: string, open: () => Promise<void>, fullPage = true) {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await open();
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: `${OUT}/${name}-${scheme}.png`, fullPage });
    expect(fs.statSync(`${OUT}/${name}-${scheme}.png`).size).toBeGreaterThan(20_000);
  }
}

test("label by keyboard, filter the search by label, and follow the hit to its task across training", async ({ page }) => {
  const traj = (await (await api.get(`/api/v1/runs/${runA}/trajectories?step=2&pageSize=1`)).json()).trajectories[0];
  await page.goto(`/runs/${runA}/trajectories?step=2&group=${traj.groupId}&traj=${traj.id}`);
  const bar = page.getByTestId("label-bar");
  await expect(bar).toContainText("1–9 label the trajectory");
  // the project's set, made here: the first label gets digit 1, the second 2
  for (const name of ["reward hacking", "loops"]) {
    await bar.getByLabel("New label").fill(name);
    await bar.getByRole("button", { name: "add" }).click();
    await expect(bar).toContainText(name);
  }
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("1");
  await expect(bar.getByTestId("applied-label")).toHaveText(["reward hacking"]);
  await expect(bar).toContainText("(pick one first)");
  await page.keyboard.press("j"); // turn 1 selected
  await expect(bar).not.toContainText("(pick one first)");
  await page.keyboard.press("Shift+Digit2");
  await expect(bar.getByTestId("applied-label")).toHaveText(["reward hacking", "loops · turn 1"]);
  await page.keyboard.press("c");
  await bar.getByLabel("Label note").fill("walks into the same hole");
  await bar.getByLabel("Label note").press("Enter");
  await expect(bar.getByTestId("applied-label").nth(1)).toContainText("walks into the same hole");
  await page.keyboard.press("1"); // a digit again takes the label off
  await expect(bar.getByTestId("applied-label")).toHaveText(["loops · turn 1 — walks into the same hole"]);
  await page.keyboard.press("1");
  await expect(bar.getByTestId("applied-label")).toHaveCount(2);
  const stored = (await (await api.get(`/api/v1/trajectories/${traj.id}/labels`)).json()).labels;
  expect(stored.map((l: { name: string; turn: number | null }) => [l.name, l.turn])).toEqual([
    ["reward hacking", null],
    ["loops", 0],
  ]);
  await shots(
    page,
    "labels",
    async () => {
      await page.goto(`/runs/${runA}/trajectories?step=2&group=${traj.groupId}&traj=${traj.id}`);
      await expect(page.getByTestId("applied-label")).toHaveCount(2);
    },
    false,
  ); // the view's first screen: the group, the label bar and the first turns

  // the search, filtered by the label: exactly that trajectory
  await page.goto(`/search?project=${PROJECT}`);
  // a click before the page has hydrated submits the form natively, without its filters (a reload
  // of the unfiltered search): search again until the URL carries the label, then count
  await expect(async () => {
    await page.getByLabel("label", { exact: true }).fill("loops");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await expect(page).toHaveURL(/[?&]label=loops(&|$)/, { timeout: 2_000 });
  }).toPass({ timeout: 30_000 });
  await expect(page.getByTestId("search-hit")).toHaveCount(1);
  await page.getByTestId("search-hit").getByRole("link", { name: "task over training →" }).click();
  await page.waitForURL(/\/tasks\?runs=/);
  await expect(page.getByTestId("timeline-step-value")).toHaveText("step 2");
  // success, return, length and advantage: one line a run each (the single run of the hit)
  await expect(page.getByTestId("timeline-curves").locator("path.recharts-line-curve")).toHaveCount(4);

  // the run page: labels per step (a step-0 trajectory labelled over the API too: two points a line)
  const set = (await (await api.get(`/api/v1/labels?project=${PROJECT}`)).json()).labels as { id: string }[];
  const first = (await (await api.get(`/api/v1/runs/${runA}/trajectories?step=0&pageSize=1`)).json()).trajectories[0];
  for (const l of set) expect((await api.post(`/api/v1/trajectories/${first.id}/labels`, { data: { labelId: l.id } })).status()).toBe(200);
  await page.goto(`/runs/${runA}`);
  await expect(page.getByTestId("label-steps")).toContainText("Labels per step");
  await expect(page.getByTestId("label-steps").locator("path.recharts-line-curve")).toHaveCount(2);
});

test("task timeline: the slider shows a step's trajectories; two of them side by side, differing turns marked", async ({ page }) => {
  // the same task in another run of the project, added from the page
  await page.goto(`/tasks?runs=${runA}&task=lake-1`);
  await expect(page.getByRole("heading", { name: "Task lake-1 across training" })).toBeVisible();
  await page.getByLabel("Add a run").selectOption({ label: "timeline-b" });
  await expect(page.getByTestId("timeline-step-run")).toHaveCount(2);
  expect(new URL(page.url()).searchParams.get("runs")).toBe(`${runA},${runB}`);
  await expect(page.getByTestId("timeline-step-value")).toHaveText("step 3");
  const slider = page.getByLabel("Step", { exact: true });
  await slider.focus();
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("ArrowLeft");
  await expect(page.getByTestId("timeline-step-value")).toHaveText("step 1");
  expect(new URL(page.url()).searchParams.get("step")).toBe("1");
  const timeline = await (await api.get(`/api/v1/tasks/timeline?runs=${runA},${runB}&task=lake-1`)).json();
  const at1 = timeline.runs.map((r: { steps: { step: number; trajectories: { id: string }[] }[] }) => r.steps.find((s) => s.step === 1)!.trajectories);
  await expect(page.getByTestId("timeline-step-run").nth(0).getByTestId("timeline-trajectory")).toHaveCount(at1[0].length);
  // A: run a's first trajectory at step 1; B: run b's first at step 3 (another step, another run)
  await page.getByTestId("timeline-step-run").nth(0).getByTestId("timeline-trajectory").first().getByRole("button", { name: "a", exact: true }).click();
  await slider.focus();
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowRight");
  await expect(page.getByTestId("timeline-step-value")).toHaveText("step 3");
  await page.getByTestId("timeline-step-run").nth(1).getByTestId("timeline-trajectory").first().getByRole("button", { name: "b", exact: true }).click();
  const u = new URL(page.url());
  const diff = await (await api.get(`/api/v1/trajectories/diff?a=${u.searchParams.get("a")}&b=${u.searchParams.get("b")}`)).json();
  expect(u.searchParams.get("a")).toBe(at1[0][0].id);
  const panel = page.getByTestId("trajectory-diff");
  await expect(panel.getByTestId("diff-count")).toHaveText(`${diff.differing} of ${diff.turns.length} turns act differently`);
  const marked = await panel.getByTestId("diff-turn").evaluateAll((els) => els.map((e) => e.getAttribute("data-differs") === "true"));
  expect(marked).toEqual(diff.turns.map((t: { differs: boolean }) => t.differs));
  expect(marked.some(Boolean)).toBe(true);
  await shots(page, "task-timeline", async () => {
    await page.goto(`/tasks?runs=${runA},${runB}&task=lake-1&step=3&a=${at1[0][0].id}&b=${u.searchParams.get("b")}`);
    await expect(page.getByTestId("diff-turn").first()).toBeVisible();
  });
});

test("a run whose uids change every step (verl, TRL): the trajectory view's task link finds the task by its prompt", async ({ page }) => {
  const r = await (await api.post("/api/v1/runs/import", { data: { name: "timeline-verl", project: PROJECT, estimator: "grpo" } })).json();
  ids.push(r.id);
  const h = { "x-turnlens-write-key": r.writeKey };
  for (const s of [0, 1, 2, 3]) {
    const groups = [0, 1].map((g) => ({
      uid: `uuid-${s}-${g}-${Math.random().toString(16).slice(2, 10)}`,
      envId: "chat",
      trajectories: [0, 1, 2].map((i) => ({
        success: i <= s % 3,
        turns: [{ observation: `Solve task ${g}: reach the goal.`, action: `try ${i}`, reward: i <= s % 3 ? 1 : 0 }],
      })),
    }));
    expect((await api.post(`/api/v1/runs/${r.id}/steps`, { data: { step: s, estimator: "grpo", groups }, headers: h })).status()).toBe(201);
  }
  const traj = (await (await api.get(`/api/v1/runs/${r.id}/trajectories?step=2&pageSize=1`)).json()).trajectories[0];
  await page.goto(`/runs/${r.id}/trajectories?step=2&group=${traj.groupId}&traj=${traj.id}`);
  const link = page.getByRole("link", { name: "This task across training →" });
  await expect(link).toHaveAttribute("href", /&prompt=Solve%20task%20/);
  await link.click();
  await page.waitForURL(/\/tasks\?runs=.*prompt=/);
  await expect(page.getByRole("heading", { name: /^Task “Solve task \d: reach the goal\.” across training$/ })).toBeVisible();
  await expect(page.getByText(/of 4 steps holding the task/)).toBeVisible();
  await expect(page.getByTestId("timeline-trajectory")).toHaveCount(3);
});
