// Dashboard uploads: the file is stored by content (<upload dir>/<sha256>/<name>; the upload dir is
// TURNLENS_UPLOAD_DIR, default data/uploads)
// and an `import` job (workers/runners/import.ts) reads and stores it. Storing by content makes an
// upload of the same file again the same path, so its job finds the run the first one made.
import { createHash, randomUUID } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { projectRoot } from "../db/url";
import { enqueue, getJob, listJobs, requestCancel, toJobOut } from "../jobs";
import { InsufficientStorageError, InvalidInputError, NotFoundError, isDiskFull } from "../schemas/errors";
import { importPayloadSchema, importReportSchema, type ImportOut, type ImportPayload, type ImportUploadQuery } from "../schemas/imports";

/** Largest upload (TURNLENS_MAX_UPLOAD_MB, default 512 MB). */
export { maxUploadBytes } from "../schemas/imports";

const emptyUpload = () => new InvalidInputError("body: the upload is empty; send the file's bytes as the request body", [{ path: "body", message: "empty" }]);

// turbopackIgnore: a path from the environment, not a file of the app to trace into the build
const uploadDir = () => path.resolve(/*turbopackIgnore: true*/ process.env.TURNLENS_UPLOAD_DIR || path.join(projectRoot(), "data", "uploads"));

/**
 * Streams an upload to a temporary file (its bytes go through `pump`, which enforces the size limit),
 * then moves it to <upload dir>/<sha256>/<filename>. A failed or refused upload leaves nothing behind;
 * a full disk (ENOSPC, EDQUOT) is a 507, never a request left waiting for a `drain` that cannot come.
 */
export async function storeUpload(
  filename: string,
  pump: (write: (chunk: Uint8Array) => Promise<void>) => Promise<number>,
): Promise<{ upload: string; sha256: string; bytes: number }> {
  const tmpDir = path.join(uploadDir(), "tmp");
  fs.mkdirSync(tmpDir, { recursive: true });
  const tmp = path.join(tmpDir, randomUUID());
  const hash = createHash("sha256");
  const out = fs.createWriteStream(tmp);
  // settles once: finished, or the first write error (which also ends any wait for `drain`)
  const done = new Promise<void>((resolve, reject) => {
    out.on("finish", resolve);
    out.on("error", reject);
  });
  done.catch(() => {}); // awaited below; until then a failure must not count as unhandled
  try {
    const bytes = await pump(async (chunk) => {
      hash.update(chunk);
      if (!out.write(chunk)) await Promise.race([once(out, "drain"), done]);
    });
    out.end();
    await done;
    if (bytes === 0) throw emptyUpload();
    const sha256 = hash.digest("hex");
    const upload = path.join(uploadDir(), sha256, filename);
    fs.mkdirSync(path.dirname(upload), { recursive: true });
    fs.renameSync(tmp, upload); // same content and name: replaced by identical bytes
    return { upload, sha256, bytes };
  } catch (e) {
    // the file is opened asynchronously: remove it only once the stream has closed
    if (!out.closed) await new Promise<void>((r) => out.once("close", () => r()).destroy());
    fs.rmSync(tmp, { force: true });
    if (isDiskFull(e))
      throw new InsufficientStorageError(
        `the upload was not stored: the server's disk is full (${(e as NodeJS.ErrnoException).code}); retry once space is freed under the upload folder`,
        [{ path: "body", message: "disk full" }],
      );
    throw e;
  }
}

/** Queues the import job of a stored upload. */
export async function enqueueImport(q: ImportUploadQuery, stored: { upload: string; sha256: string; bytes: number }): Promise<ImportOut> {
  // no undefined values: the payload is stored as JSON
  const payload: ImportPayload = importPayloadSchema.parse({
    format: q.format,
    project: q.project,
    ...(q.name ? { name: q.name } : {}),
    filename: q.filename,
    ...stored,
  });
  const job = await enqueue({ kind: "import", payload });
  return importView(job.id);
}

/** An import job with its upload and, once it succeeded, its report. 404 for other jobs. */
export async function importView(id: string): Promise<ImportOut> {
  const job = await getJob(id); // 404 for an unknown job
  if (job.kind !== "import") throw new NotFoundError("import", id);
  const p = importPayloadSchema.parse(job.payload);
  const report = job.status === "succeeded" ? importReportSchema.safeParse(job.result) : null;
  return {
    id: job.id,
    format: p.format,
    project: p.project,
    name: p.name ?? null,
    filename: p.filename,
    bytes: p.bytes,
    sha256: p.sha256,
    job: toJobOut(job),
    report: report?.success ? report.data : null,
  };
}

/** Stops an import: a queued one at once, a running one within a heartbeat (its Python child is killed). */
export async function cancelImport(id: string): Promise<ImportOut> {
  await importView(id); // 404 unless it is an import
  await requestCancel(id);
  return importView(id);
}

/** The latest imports, most recent first (queued ones first, in claim order, as the job list). */
export async function listImports(page: number, pageSize: number): Promise<{ imports: ImportOut[]; total: number; page: number; pageSize: number }> {
  const { jobs, total } = await listJobs({ kind: "import", page, pageSize });
  return { imports: await Promise.all(jobs.map((j) => importView(j.id))), total, page, pageSize };
}
