// The monitors editor in Chromium: a project without rules shows the defaults, marked; the entropy
// rule's threshold changed and saved is stored (the API and a reload both read it); a bad k and a
// non-http webhook come back from the server as errors at their fields, storing nothing; Reset to
// defaults and Save restore the default rules. Screenshots for docs/dashboard.md, light and dark.
import { expect, test, type APIRequestContext } from "@playwright/test";

const BASE = `http://127.0.0.1:${process.env.E2E_PORT ?? 3100}`;
const OUT = "docs/screenshots";
const PROJECT = "e2e-monitors";
let api: APIRequestContext;
let projectId = "";

test.use({ viewport: { width: 1440, height: 1000 } });

test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: BASE });
  expect((await api.post("/api/v1/runs/import", { data: { project: PROJECT, name: "monitored", envId: "alfworld", estimator: "grpo" } })).ok()).toBe(true);
  const { projects } = await (await api.get("/api/v1/projects")).json();
  projectId = projects.find((p: { name: string }) => p.name === PROJECT).id;
});
test.afterAll(async () => api.dispose());

const stored = async () => (await api.get(`/api/v1/projects/${projectId}/alert-rules`)).json();

test("edit a project's rules: change the entropy threshold, save, reload; bad values are errors at their fields", async ({ page }) => {
  await page.goto(`/monitors?project=${projectId}`);
  await expect(page.getByTestId("monitors-source")).toHaveText(/default rules/);
  await expect(page.getByTestId("monitor-rule")).toHaveCount(6);
  // the theme follows the system's until chosen: set before the page loads
  for (const scheme of ["dark", "light"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.reload();
    await expect(page.getByTestId("monitor-rule")).toHaveCount(6);
    await page.screenshot({ path: `${OUT}/monitors-${scheme}.png`, fullPage: true });
  }

  const entropy = page.getByRole("region", { name: "Rule Entropy falling" });
  await entropy.getByLabel("value", { exact: true }).fill("0.35");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved.");
  await expect(page.getByTestId("monitors-source")).toHaveText(/the project's own rules/);
  const saved = await stored();
  expect(saved.defaults).toBe(false);
  expect(saved.rules.find((r: { id: string }) => r.id === "entropy-falling").value).toBe(0.35);
  await page.reload();
  await expect(page.getByRole("region", { name: "Rule Entropy falling" }).getByLabel("value", { exact: true })).toHaveValue("0.35");

  // k = 0 and an ftp:// webhook: the server's 400 shown at both fields; nothing stored
  await page.getByRole("region", { name: "Rule Entropy falling" }).getByLabel("k", { exact: true }).fill("0");
  await page.getByLabel("Webhook URL").fill("ftp://example.org/hook");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByTestId("error-rule-0-k")).toHaveText("must be at least 1");
  await expect(page.getByTestId("error-webhookUrl")).toHaveText("must be an http:// or https:// URL");
  expect(await stored()).toEqual(saved);

  // add a rule, remove it again, then back to the defaults
  await page.getByRole("button", { name: "Add a rule" }).click();
  await expect(page.getByTestId("monitor-rule")).toHaveCount(7);
  await page.getByRole("region", { name: "Rule rule-7" }).getByRole("button", { name: "Remove" }).click();
  await expect(page.getByTestId("monitor-rule")).toHaveCount(6);
  await page.getByRole("button", { name: "Reset to defaults" }).click();
  await page.getByLabel("Webhook URL").fill("");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved.");
  expect((await stored()).rules.find((r: { id: string }) => r.id === "entropy-falling").value).toBe(0.5);
});
