// A full disk, for real: the upload folder is a 1 MB tmpfs (mounting needs root; the suite is
// skipped where mount is refused). An upload that does not fit is answered 507 and leaves no partial
// file (a write stream waits forever for a `drain` that never comes after ENOSPC); ENOSPC anywhere in a
// route is a 507, not a 500; an import job that hits it is re-queued and succeeds once space is freed.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const env = useTempDatabase("disk-full");
const uploads = path.join(env.dir, "uploads");
fs.mkdirSync(uploads, { recursive: true });
let mounted = false;
try {
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", uploads], { stdio: "pipe" });
  mounted = true;
} catch {
  // not root (or no mount in this sandbox): the suite is skipped
}
process.env.TURNLENS_UPLOAD_DIR = uploads;
const uploadRoute = await import("@/app/api/v1/imports/route");
const importRoute = await import("@/app/api/v1/imports/[id]/route");
const { statusOf, toErrorResponse } = await import("@/lib/api/errors");
const { isRetryable } = await import("@/lib/jobs/errors");
const { countRows } = await import("../helpers/db-inspect");
import type { ImportOut } from "@/lib/schemas/imports";

afterAll(async () => {
  await killAllWorkers();
  if (mounted) execFileSync("umount", [uploads]);
  await env.cleanup();
});

/** Fills the upload folder's disk to the last byte; returns the filler file. */
function fillDisk(): string {
  const filler = path.join(uploads, "filler");
  const fd = fs.openSync(filler, "w");
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024));
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

async function post(body: Uint8Array | string) {
  const url = new URL("/api/v1/imports?format=verl&filename=3.jsonl&project=disk", "http://127.0.0.1:3000");
  const res = uploadRoute.POST(new NextRequest(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body: body as BodyInit }), {
    params: Promise.resolve({}),
  });
  // an upload that never gets an answer is the bug: fail in seconds, not at the test timeout
  const answered = await Promise.race([res, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
  expect(answered, "the upload got no answer within 10 s").not.toBeNull();
  return { status: answered!.status, json: await answered!.json() };
}

async function getImport(id: string): Promise<ImportOut> {
  const res = await importRoute.GET(new NextRequest(new URL(`/api/v1/imports/${id}`, "http://127.0.0.1:3000")), { params: Promise.resolve({ id }) });
  return res.json();
}

describe.skipIf(!mounted)("a full disk", () => {
  beforeAll(() => expect(fs.statfsSync(uploads).blocks * fs.statfsSync(uploads).bsize).toBeLessThanOrEqual(1 << 20));

  it("answers an upload that does not fit 507, naming the problem, and removes its partial file", async () => {
    const r = await post(new Uint8Array(3 << 20).fill(120)); // 3 MB into 1 MB
    expect(r.status).toBe(507);
    expect(r.json.error).toMatch(/the upload was not stored: the server's disk is full \(ENOSPC\)/);
    expect(r.json.issues).toEqual([{ path: "body", message: "disk full" }]);
    expect(fs.readdirSync(path.join(uploads, "tmp"))).toEqual([]);
    expect(countRows("Job")).toBe(0);
  });

  it("maps ENOSPC raised anywhere to 507 (not 500), and makes it a retry for a job", async () => {
    const filler = fillDisk();
    let enospc: unknown;
    try {
      fs.writeFileSync(path.join(uploads, "more"), "x".repeat(8192));
    } catch (e) {
      enospc = e;
    }
    fs.rmSync(filler);
    fs.rmSync(path.join(uploads, "more"), { force: true });
    expect((enospc as NodeJS.ErrnoException).code).toBe("ENOSPC");
    expect(statusOf(enospc)).toBe(507);
    const res = toErrorResponse(enospc);
    expect(res.status).toBe(507);
    expect((await res.json()).error).toMatch(/the server's disk is full \(ENOSPC\)/);
    expect(isRetryable(enospc)).toBe(true);
  });

  it("re-queues an import job that hits ENOSPC, and completes it once space is freed", async () => {
    const rows = [0, 1, 2].map((i) => JSON.stringify({ input: `q${i}`, output: "a", score: 1, step: 3 })).join("\n") + "\n";
    const r = await post(rows);
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    // the upload is stored; its importer will find no room for its spool
    const filler = fillDisk();
    const worker = spawnWorker({ TURNLENS_JOB_RETRY_BACKOFF_MS: "2000" }, ["--kinds", "import"]);
    await worker.ready;
    const requeued = await waitFor(
      "the job re-queued after ENOSPC",
      async () => {
        const imp = await getImport(r.json.id);
        expect(imp.job.status, imp.job.error ?? "").not.toBe("failed");
        return imp.job.status === "queued" && imp.job.attempts === 1 ? imp : null;
      },
      30_000,
      50,
    );
    expect(requeued.job.error).toMatch(/the disk is full \(ENOSPC/);
    fs.rmSync(filler);
    const done = await waitFor(
      "the import to end",
      async () => {
        const imp = await getImport(r.json.id);
        return ["succeeded", "failed", "canceled"].includes(imp.job.status) ? imp : null;
      },
      60_000,
      100,
    );
    expect(done.job.status, done.job.error ?? "").toBe("succeeded");
    expect(done.job.attempts).toBe(2);
    expect(done.report!.runs[0]).toMatchObject({ created: true, imported: 3 });
  });
});
