// Upload a generic JSONL file on the import page, watch the import job finish, read its report
// (rows imported, the malformed line rejected with its reason), open the run it made; upload the
// same file again and see nothing added.
import { expect, test, type Page } from "@playwright/test";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const ART = "test/artifacts";
fs.mkdirSync(ART, { recursive: true });
const shot = (page: Page, name: string) => page.screenshot({ path: `${ART}/${name}.png`, fullPage: true });

const NAME = `e2e-import-${Date.now()}`;
const lines = [
  JSON.stringify({ type: "run", name: NAME, config: { lr: 3e-4 }, envId: "sokoban", estimator: "grpo" }),
  ...Array.from({ length: 30 }, (_, s) => JSON.stringify({ type: "metrics", step: s, values: { "train/reward": s / 30, "train/kl": 0.01 } })),
  JSON.stringify({
    type: "rollouts",
    step: 0,
    groups: { g0: [[{ observation: "o", action: "left", reward: 1, anchor: "A" }], [{ observation: "o", action: "right", reward: 0, anchor: "A" }]] },
  }),
  "{this line is not JSON",
  JSON.stringify({ type: "finish", status: "succeeded" }),
];
const file = { name: "my-trainer-log.jsonl", mimeType: "application/x-ndjson", buffer: Buffer.from(lines.join("\n") + "\n") };

async function uploadOnce(page: Page) {
  await page.goto("/runs");
  await page.getByRole("navigation").getByRole("link", { name: "Import" }).click();
  await expect(page.getByRole("heading", { name: "Import runs" })).toBeVisible();
  await page.getByLabel(/Generic JSONL/).check();
  await page.getByLabel("Project", { exact: true }).fill("e2e-import");
  await page.getByLabel("File to upload").setInputFiles(file);
  await page.getByRole("button", { name: "Upload and import" }).click();
  await page.waitForURL(/\/import\?job=[\w-]+$/);
  const status = page.getByTestId("import-status");
  await expect(status.getByTestId("status-badge")).toHaveText("succeeded", { timeout: 60_000 });
  return status;
}

test("upload a JSONL file, see the report and the imported run; a re-upload adds nothing", async ({ page }) => {
  const status = await uploadOnce(page);
  const report = status.getByTestId("import-report");
  await expect(report.getByTestId("count-imported")).toHaveText("61"); // 30 lines x 2 values + 1 rollouts line
  await expect(report.getByTestId("count-rejected")).toHaveText("1");
  await expect(status.getByTestId("rejected-rows")).toContainText("my-trainer-log.jsonl:33");
  await expect(status.getByTestId("rejected-rows")).toContainText("not valid JSON");
  await shot(page, "import-done");

  await status.getByRole("link", { name: NAME }).click();
  await page.waitForURL(/\/runs\/[\w-]+$/);
  await expect(page.getByTestId("run-name")).toHaveText(NAME);
  const runId = page.url().split("/").pop()!;

  const again = await uploadOnce(page);
  const report2 = again.getByTestId("import-report");
  await expect(report2.getByTestId("count-imported")).toHaveText("0");
  await expect(report2.getByTestId("count-already")).toHaveText("61");
  await expect(again.getByText("(existing run)")).toBeVisible();
  await expect(page.getByTestId("recent-imports").getByText(file.name)).toHaveCount(2);
  await shot(page, "import-again");

  expect((await page.request.delete(`/api/v1/runs/${runId}`)).ok()).toBe(true);
});

test("a path-traversal archive fails the import with a clear error on the page", async ({ page }) => {
  const evil = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "e2e-import-")), "evil.tar.gz");
  execFileSync("python3", [
    "-c",
    "import io,sys,tarfile\nwith tarfile.open(sys.argv[1],'w:gz') as t:\n d=b'{}\\n'\n i=tarfile.TarInfo('dump/../../escaped.jsonl'); i.size=len(d); t.addfile(i,io.BytesIO(d))",
    evil,
  ]);
  await page.goto("/import");
  await page.getByLabel(/verl rollout dump/).check();
  await page.getByLabel("File to upload").setInputFiles(evil);
  await page.getByRole("button", { name: "Upload and import" }).click();
  await page.waitForURL(/\/import\?job=[\w-]+$/);
  const status = page.getByTestId("import-status");
  await expect(status.getByTestId("status-badge")).toHaveText("failed", { timeout: 60_000 });
  await expect(status.getByTestId("import-error")).toContainText("'..' in the path refused (path traversal)");
  await expect(status.getByTestId("import-report")).toHaveCount(0);
  await shot(page, "import-refused");
});
