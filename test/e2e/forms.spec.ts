// The launch form never launches something other than what is shown: every field is
// checked in the browser with the server's zod schema (exclusive bounds included), a JSON box
// whose text does not parse blocks Launch with an error at the field, errors are in plain words at
// their field (the server's too), `model` and `context` are sub-forms, and the training form is in
// titled sections with advanced fields folded.
import { expect, test, type APIRequestContext } from "@playwright/test";
import fs from "node:fs";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const TAG = "e2e-forms";
const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
let api: APIRequestContext;
let imported: { id: string; writeKey: string };

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  const r = await api.post("/api/v1/runs/import", { data: { name: "e2e-forms-imported", envId: "frozenlake", estimator: "gigpo", tags: [TAG], config: {} } });
  expect(r.ok()).toBe(true);
  imported = await r.json();
});

test.afterAll(async () => {
  const list = await (await api.get(`/api/v1/runs?tag=${TAG}&pageSize=100`)).json();
  for (const r of list.runs as { id: string }[]) await api.delete(`/api/v1/runs/${r.id}`);
  await api.dispose();
});

const launchBtn = (page: import("@playwright/test").Page) => page.getByRole("button", { name: "Launch run" });

test("training form: titled sections, advanced fields folded, model and context as sub-forms", async ({ page }) => {
  await page.goto("/runs/new");
  await page.locator("#job-kind").selectOption("train");
  for (const title of ["Task and environment", "Model", "Credit estimator", "Optimisation", "Rollout", "Evaluation", "Checkpoints"])
    await expect(page.getByRole("heading", { name: title, exact: true })).toBeVisible();
  // the section order is the layout's
  const order = await page.locator('section[data-testid^="section-"] > h2').allTextContents();
  expect(order.slice(0, 7)).toEqual(["Task and environment", "Model", "Credit estimator", "Optimisation", "Rollout", "Evaluation", "Checkpoints"]);
  // advanced fields are folded until asked for
  await expect(page.locator("#job-clipRatio")).toBeHidden();
  await page.getByTestId("section-Optimisation").locator("summary").click();
  await expect(page.locator("#job-clipRatio")).toBeVisible();
  await expect(page.locator("#job-clipRatio")).toHaveValue("0.2");

  // model: kind select, then the chosen kind's own fields
  await expect(page.locator("#job-model")).toHaveValue("tiny");
  await expect(page.locator("#job-model-layers")).toHaveValue("2");
  await expect(page.locator("#job-model-tokenizer")).toHaveValue("char");
  await page.locator("#job-model").selectOption("hf");
  await expect(page.locator("#job-model-layers")).toHaveCount(0);
  await expect(page.getByTestId("error-model-path")).toHaveText("required");
  await expect(launchBtn(page)).toBeDisabled();
  await page.locator("#job-model-path").fill("/models/qwen");
  await page.locator("#job-model-lora").check();
  await expect(page.locator("#job-model-lora-r")).toHaveValue("8");
  await page.locator("#job-model-lora-alpha").fill("0");
  await expect(page.getByTestId("error-model-lora-alpha")).toHaveText("must be greater than 0");
  await page.locator("#job-model-lora-alpha").fill("16");
  await expect(page.getByTestId("error-model-lora-alpha")).toHaveCount(0);

  // context: strategy select, then its parameter
  await expect(page.locator("#job-context")).toHaveValue("window");
  await expect(page.locator("#job-context-turns")).toHaveValue("0");
  await page.locator("#job-context").selectOption("memory");
  await expect(page.locator("#job-context-maxChars")).toHaveValue("400");
  await page.locator("#job-context").selectOption("full");
  await expect(page.locator("#job-context-turns")).toHaveCount(0);
  await expect(page.locator("#job-context-maxChars")).toHaveCount(0);
  await expect(launchBtn(page)).toBeEnabled();
  await page.screenshot({ path: `${ART}/launch-train-sections.png`, fullPage: true });
});

test("invalid JSON blocks Launch with an error at the field; the fixed value is what is sent", async ({ page }) => {
  await page.goto("/runs/new");
  await page.locator("#job-kind").selectOption("train");
  await page.getByTestId("json-toggle-context").click();
  const box = page.locator("textarea#job-context");
  await box.fill('{"strategy": "window", "turns": ');
  await expect(page.getByTestId("error-context")).toContainText("not valid JSON");
  await expect(box).toHaveAttribute("aria-invalid", "true");
  await expect(launchBtn(page)).toBeDisabled();
  await expect(page.getByTestId("form-invalid")).toBeVisible();
  // valid JSON that the schema refuses is an error at the same field, in plain words
  await box.fill('{"strategy": "window", "turns": 99}');
  await expect(page.getByTestId("error-context")).toHaveText("turns: must be at most 64");
  await expect(launchBtn(page)).toBeDisabled();
  await box.fill('{"strategy": "window", "turns": 3}');
  await expect(page.getByTestId("error-context")).toHaveCount(0);
  await expect(launchBtn(page)).toBeEnabled();
  // what Launch sends is what the box shows (the request is stopped before it reaches the server:
  // this test must not start a training job)
  // biome-ignore lint/suspicious/noExplicitAny: the launch body as sent, read field by field
  let sent: any = null;
  await page.route("**/api/v1/runs", async (route) => {
    if (route.request().method() === "POST") {
      sent = route.request().postDataJSON();
      await route.abort();
    } else await route.continue();
  });
  await launchBtn(page).click();
  await expect.poll(() => sent).not.toBeNull();
  expect(sent.jobKind).toBe("train");
  expect(sent.config.context).toEqual({ strategy: "window", turns: 3 });
  await expect(page.getByTestId("launch-error")).toBeVisible();
});

test("exclusive bounds and the name limit are enforced in the browser, in plain words", async ({ page }) => {
  await page.goto("/runs/new");
  await page.locator("#job-kind").selectOption("train");
  await page.locator("#job-lr").fill("0");
  await expect(page.getByTestId("error-lr")).toHaveText("must be greater than 0");
  await expect(launchBtn(page)).toBeDisabled();
  await page.locator("#job-lr").fill("0.001");
  await expect(page.getByTestId("error-lr")).toHaveCount(0);
  await page.locator("#job-steps").fill("2.5");
  await expect(page.getByTestId("error-steps")).toHaveText("must be a whole number");
  await page.locator("#job-steps").fill("");
  await expect(page.getByTestId("error-steps")).toHaveText("must be a number");
  await page.locator("#job-steps").fill("20");
  await page.locator("#run-name").fill("x".repeat(201));
  await expect(page.getByTestId("error-name")).toHaveText("must have at most 200 characters");
  await expect(launchBtn(page)).toBeDisabled();
  await page.screenshot({ path: `${ART}/launch-errors.png`, fullPage: true });
  await page.locator("#run-name").fill("ok-name");
  await expect(page.getByTestId("error-name")).toHaveCount(0);
  await expect(launchBtn(page)).toBeEnabled();
  // an advanced field's bound, too (the Rollout section's folded temperature: > 0)
  await page.getByTestId("section-Rollout").locator("summary").click();
  await page.locator("#job-temperature").fill("0");
  await expect(page.getByTestId("error-temperature")).toHaveText("must be greater than 0");
  await expect(launchBtn(page)).toBeDisabled();
});

test("a server-side refusal lands at its field in plain words", async ({ page }) => {
  await page.goto("/runs/new");
  await page.locator("#job-kind").selectOption("onnx-eval");
  // the browser cannot know that this run is not a training run: only the server can
  await page.locator("#job-sourceRunId").fill(imported.id);
  await page.locator("#run-tags").fill(TAG);
  await expect(launchBtn(page)).toBeEnabled();
  await launchBtn(page).click();
  await expect(page.getByTestId("error-sourceRunId")).toHaveText("not a training run");
  await expect(page.locator("#job-sourceRunId")).toHaveAttribute("aria-invalid", "true");
  // the field's server error goes once the field is edited
  await page.locator("#job-sourceRunId").fill(`${imported.id}x`);
  await expect(page.getByTestId("error-sourceRunId")).toHaveCount(0);
});
