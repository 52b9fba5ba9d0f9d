// An upload of several sources where one has nothing importable: the import job stores the others
// and reports that source's rows, each with its line and reason, instead of leaving them out
// ("0 rejected" beside the runs it made). A real worker runs the Python importer.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor, type WorkerProcess } from "../helpers/workers";

const env = useTempDatabase("import-rejected-source");
process.env.TURNLENS_UPLOAD_DIR = path.join(env.dir, "uploads");
const uploadRoute = await import("@/app/api/v1/imports/route");
const importRoute = await import("@/app/api/v1/imports/[id]/route");
import type { ImportOut } from "@/lib/schemas/imports";

let worker: WorkerProcess;
beforeAll(async () => {
  worker = spawnWorker({}, ["--kinds", "import"]);
  await worker.ready;
});
afterAll(async () => {
  await killAllWorkers();
  await env.cleanup();
});

it("reports the rejected rows of a source with nothing importable beside the runs the others make", async () => {
  const root = path.join(env.dir, "files", "logs");
  fs.mkdirSync(root, { recursive: true });
  const line = (x: object) => `${JSON.stringify(x)}\n`;
  fs.writeFileSync(path.join(root, "good.jsonl"), line({ type: "run", name: "good" }) + line({ type: "metrics", step: 0, values: { "train/reward": 1 } }));
  fs.writeFileSync(path.join(root, "bad.jsonl"), `{oops\n${line({ type: "nope" })}`);
  const tgz = path.join(env.dir, "files", "logs.tar.gz");
  execFileSync("tar", ["-czf", tgz, "-C", path.dirname(root), "logs"]);
  const url = new URL("/api/v1/imports", "http://127.0.0.1:3000");
  for (const [k, v] of Object.entries({ format: "jsonl", filename: "logs.tar.gz", project: "uploads" })) url.searchParams.set(k, v);
  const res = await uploadRoute.POST(
    new NextRequest(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body: fs.readFileSync(tgz) as BodyInit }),
    { params: Promise.resolve({}) },
  );
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { id: string }).id;
  const imp = await waitFor(
    "the import",
    async () => {
      const r = (await (
        await importRoute.GET(new NextRequest(new URL(`/api/v1/imports/${id}`, "http://127.0.0.1:3000")), { params: Promise.resolve({ id }) })
      ).json()) as ImportOut;
      return ["succeeded", "failed", "canceled"].includes(r.job.status) ? r : null;
    },
    90_000,
    200,
  );
  expect(imp.job.status, imp.job.error ?? "").toBe("succeeded");
  expect(imp.report?.runs.map((r) => r.name)).toEqual(["good"]);
  expect(imp.report?.rejected).toBe(2);
  expect(imp.report?.rejectedRows).toEqual([
    { source: expect.stringMatching(/bad\.jsonl$/), where: "bad.jsonl:1", reason: expect.stringMatching(/not valid JSON/) },
    { source: expect.stringMatching(/bad\.jsonl$/), where: "bad.jsonl:2", reason: expect.stringMatching(/type: expected run, metrics/) },
  ]);
}, 120_000);
