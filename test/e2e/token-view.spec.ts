// The token view on real tokens: a short train job run by the e2e server's worker and the PyTorch
// engine stores each turn's token ids, texts, sampling log-probs and entropies; the trajectory
// browser draws exactly those tokens, tints them by advantage, log-prob or entropy, and shows the
// values on hover; credit over training draws the entropy per turn index. A run that stored no
// token data says so and keeps the display-word view.
// Screenshots of the token view (light and dark) go to docs/screenshots.
import { expect, test, type APIRequestContext, type Locator } from "@playwright/test";
import fs from "node:fs";
import { gigpoStep } from "../dashboard/fixtures";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
let api: APIRequestContext;
const runs: { train: string; imported: string } = { train: "", imported: "" };

type Tokens = { ids: number[]; texts: string[] | null; logprobs: number[] | null; entropies: number[] | null };
type Turn = { index: number; tokens: Tokens | null; action: string };

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ playwright }) => {
  test.setTimeout(240_000);
  api = await playwright.request.newContext({ baseURL: BASE });
  // 2 steps of 2 tasks x G=4 on the default FrozenLake, char tokenizer: actions are several tokens
  const r = await api.post("/api/v1/runs", {
    data: {
      jobKind: "train",
      name: "e2e-token-view",
      config: {
        steps: 2,
        groupsPerStep: 2,
        groupSize: 4,
        evalInterval: 10,
        evalEpisodes: 4,
        checkpointInterval: 10,
        exportOnnx: false,
        threads: 1,
      },
    },
  });
  expect(r.status(), await r.text()).toBe(201);
  runs.train = (await r.json()).id;
  await expect.poll(async () => (await (await api.get(`/api/v1/runs/${runs.train}`)).json()).status, { timeout: 200_000, intervals: [1000] }).toBe("succeeded");

  const imp = await api.post("/api/v1/runs/import", { data: { name: "e2e-no-token-data", envId: "frozenlake", estimator: "gigpo" } });
  const run = await imp.json();
  runs.imported = run.id;
  expect(
    (
      await api.post(`/api/v1/runs/${run.id}/steps`, {
        data: gigpoStep(0, { groups: 2, G: 4, maxTurns: 4, seed: 3 }),
        headers: { "x-turnlens-write-key": run.writeKey },
      })
    ).ok(),
  ).toBe(true);
});

test.afterAll(async () => {
  for (const id of Object.values(runs)) if (id) await api.delete(`/api/v1/runs/${id}`);
  await api.dispose();
});

/** The trajectory the browser shows (its `traj` URL parameter after clicking the first row) from the API. */
async function shownTrajectory(url: string): Promise<Turn[]> {
  const id = new URL(url).searchParams.get("traj");
  expect(id).toBeTruthy();
  const r = await api.get(`/api/v1/trajectories/${id}`);
  return (await r.json()).turns as Turn[];
}

const colours = (l: Locator) => l.evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));

test("the token view shows the token ids a train run stored, tinted by advantage, log-prob or entropy", async ({ page }) => {
  await page.goto(`/runs/${runs.train}/trajectories`);
  // open the first trajectory of the shown group, so the URL names it
  await page.getByTestId("trajectory-tab").first().click();
  await expect(page).toHaveURL(/traj=/);
  const turns = await shownTrajectory(page.url());
  expect(turns.length).toBeGreaterThan(0);
  expect(turns.every((u) => u.tokens && u.tokens.ids.length > 0 && u.tokens.logprobs && u.tokens.entropies && u.tokens.texts)).toBe(true);

  await expect(page.getByTestId("token-note")).toContainText("Policy tokens as stored with the run");
  const views = page.getByTestId("token-view");
  await expect(views).toHaveCount(turns.length);
  for (const [i, u] of turns.entries()) {
    const view = views.nth(i);
    await expect(view).toHaveAttribute("data-kind", "policy-tokens");
    const spans = view.locator("[data-token-id]");
    expect(await spans.evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-token-id"))))).toEqual(u.tokens!.ids);
    expect(await spans.allTextContents()).toEqual(u.tokens!.texts);
    expect(u.tokens!.texts!.join("")).toBe(u.action);
  }

  // hover: the first token's id, text and stored values
  const first = views.first().locator("[data-token-id]").first();
  const t0 = turns[0].tokens!;
  const title = await first.getAttribute("title");
  expect(title).toContain(`token ${t0.ids[0]} ${JSON.stringify(t0.texts![0])}`);
  expect(title).toContain(`log-prob ${t0.logprobs![0] < 0 ? "-" : ""}`);
  expect(title).toContain(`entropy ${t0.entropies![0].toFixed(3)}`);

  // the tint follows the selector: entropy paints the uncertain first character of an action and
  // leaves the ones the admissible set forces (entropy 0) at the scale's centre colour
  const all = page.locator("[data-token-id]");
  const byAdvantage = await colours(all);
  await page.getByLabel("Tint tokens by").selectOption("entropy");
  await expect(page).toHaveURL(/tint=entropy/);
  // the URL changes before the tokens are painted again: poll the colours (CI read them in between)
  await expect.poll(() => colours(all)).not.toEqual(byAdvantage);
  const byEntropy = await colours(all);
  const ents = turns.flatMap((u) => u.tokens!.entropies!);
  const zero = ents.indexOf(0);
  const high = ents.indexOf(Math.max(...ents));
  if (zero >= 0) expect(byEntropy[zero]).not.toEqual(byEntropy[high]);
  await page.getByLabel("Tint tokens by").selectOption("logprob");
  await expect(page).toHaveURL(/tint=logprob/);
  await expect.poll(() => colours(all)).not.toEqual(byEntropy);

  // docs/screenshots: the turns of this trajectory, tinted by entropy, light and dark
  await page.getByLabel("Tint tokens by").selectOption("entropy");
  const url = page.url();
  fs.mkdirSync("docs/screenshots", { recursive: true });
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(url);
    await expect(page.locator("html")).toHaveClass(scheme === "dark" ? /dark/ : /^(?!.*dark)/);
    await expect(page.locator("[data-token-id]").first()).toBeVisible();
    await page.waitForLoadState("networkidle");
    // from the tint selector and the note above the turns down to the first turns
    await page.setViewportSize({ width: 1400, height: 1300 });
    await page.evaluate(() => window.scrollBy(0, document.querySelector('[data-testid="token-note"]')!.getBoundingClientRect().top - 110));
    await page.screenshot({ path: `docs/screenshots/token-view-${scheme}.png` });
    expect(fs.statSync(`docs/screenshots/token-view-${scheme}.png`).size).toBeGreaterThan(20_000);
  }
});

test("credit over training draws the stored token entropy per turn index (GTR's thought collapse) when the run has it", async ({ page }) => {
  await page.goto(`/runs/${runs.train}/credit`);
  const chart = page.getByTestId("turn-diag-entropy");
  await expect(chart).toBeVisible();
  await expect(chart.locator(".recharts-line").first()).toBeVisible();
  await page.screenshot({ path: "test/artifacts/turn-entropy.png", fullPage: true });
  await page.goto(`/runs/${runs.imported}/credit`);
  await expect(page.getByTestId("turn-diag-reach")).toBeVisible();
  await expect(page.getByTestId("turn-diag-entropy")).toHaveCount(0);
});

test("a run without token data says so and keeps the display-word view", async ({ page }) => {
  await page.goto(`/runs/${runs.imported}/trajectories`);
  await expect(page.getByTestId("token-note")).toContainText("This run stored no token data");
  await expect(page.getByTestId("token-view").first()).toHaveAttribute("data-kind", "display-words");
  await expect(page.locator("[data-token-id]")).toHaveCount(0);
  await expect(page.getByLabel("Tint tokens by").locator('option[value="entropy"]')).toBeDisabled();
});
