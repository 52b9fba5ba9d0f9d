// A zip bomb uploaded on the import page: a small zip whose member expands to hundreds of MB of
// zeros beside a member of good rows (extracted and read whole, 1 GB of zeros would take 2 GB of
// RSS). The importer refuses the archive by its headers before extracting anything, the job fails
// naming the member, and no run is made.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const env = useTempDatabase("import-bomb");
process.env.TURNLENS_UPLOAD_DIR = path.join(env.dir, "uploads");
const uploadRoute = await import("@/app/api/v1/imports/route");
const importRoute = await import("@/app/api/v1/imports/[id]/route");
const { countRows } = await import("../helpers/db-inspect");
import type { ImportOut } from "@/lib/schemas/imports";

beforeAll(async () => {
  await spawnWorker({}, ["--kinds", "import"]).ready;
});
afterAll(async () => {
  await killAllWorkers();
  await env.cleanup();
});

describe("a zip bomb upload", () => {
  it("fails the import naming the member, extracts nothing and makes no run", async () => {
    const zip = path.join(env.dir, "bomb.zip");
    execFileSync(
      process.env.TURNLENS_PYTHON ?? "python3",
      [
        "-c",
        `import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("dump/1.jsonl", '{"input": "q", "output": "a", "score": 1, "step": 1}\\n' * 10)
    with z.open("dump/2.jsonl", "w") as f:
        for _ in range(256):
            f.write(bytes(1 << 20))`,
        zip,
      ],
      { stdio: "pipe" },
    );
    const bytes = fs.readFileSync(zip);
    expect(bytes.length).toBeLessThan(1 << 20); // 256 MB inside
    const url = new URL("/api/v1/imports?format=verl&filename=dump.zip&project=bombs", "http://127.0.0.1:3000");
    const res = await uploadRoute.POST(new NextRequest(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body: bytes }), {
      params: Promise.resolve({}),
    });
    expect(res.status).toBe(201);
    const { id } = await res.json();
    const done = await waitFor(
      "the import to end",
      async () => {
        const r = await importRoute.GET(new NextRequest(new URL(`/api/v1/imports/${id}`, "http://127.0.0.1:3000")), { params: Promise.resolve({ id }) });
        const imp = (await r.json()) as ImportOut;
        return ["succeeded", "failed", "canceled"].includes(imp.job.status) ? imp : null;
      },
      60_000,
      100,
    );
    expect(done.job.status).toBe("failed");
    expect(done.job.error).toMatch(
      /^archive member 'dump\/2\.jsonl': \d+ bytes that expand to 268435456 \(more than 200 times; limit TURNLENS_IMPORT_MAX_RATIO\): refused as a zip bomb$/,
    );
    expect(done.job.attempts).toBe(1); // a refused archive is not retried
    expect(countRows("Run")).toBe(0);
  });
});
