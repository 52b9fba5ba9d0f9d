// `import`: an uploaded file (lib/runs/imports.ts stored it, by content) becomes runs.
//
// 1. The Python client's importer reads it (one implementation of each format, archives extracted
//    safely there): `python -m turnlens.cli import FORMAT FILE --offline --spool DIR` writes one
//    client spool per run (run.json with the create body, records.jsonl, rejected.jsonl).
// 2. This runner applies each spool through the ingest service the HTTP API uses (lib/ingest:
//    the same zod validation, the same IngestBatch records), fenced by the job's lease.
// An upload no importer can read fails the job with the importer's one-line reason (what the file
// is, what the format takes), never a server path or a stack trace.
// Rows go to the store from this process, not over HTTP: the worker needs no server URL, API token
// or run write key, and cannot be refused by the server's ingest queue (429). Re-running is safe:
// the run is found again by its import id (a digest of the format and the upload's content path)
// and every batch id is a digest of its content, so a repeat stores nothing twice.
import { createInterface } from "node:readline";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRun, deleteRun, importedRun } from "../../lib/db/runs";
import { writeTransaction } from "../../lib/db/raw";
import { findImportedRun, finishImportedRunRow } from "../../lib/db/runs";
import { handleIngest } from "../../lib/ingest/thread";
import { issueWriteKey } from "../../lib/ingest/write-access";
import { TERMINAL_STATUSES } from "../../lib/schemas/common";
import { importPayloadSchema, REJECTED_SHOWN, type ImportReport } from "../../lib/schemas/imports";
import { importRunSchema } from "../../lib/schemas/runs";
import { isDiskFull } from "../../lib/schemas/errors";
import { runChild } from "./child";
import type { JobContext, JobRunner } from "./types";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** progress spent reading (Python); the rest is storing, by request */
const READ_SHARE = 0.2;
/** the Python CLI's exit code for a full disk (sysexits.h EX_TEMPFAIL) */
const EX_TEMPFAIL = 75;

/** A failure the user can act on: its message is the whole story, so the job log gets no stack trace. `retryable`: another attempt may succeed (lib/jobs isRetryable). */
class ImportFailed extends Error {
  constructor(
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = "ImportFailed";
    this.stack = message;
  }
}

/** Where the server keeps uploads is no business of the user: name files relative to the upload. */
function withoutServerPaths(text: string, file: string): string {
  return text
    .split(file)
    .join(path.basename(file))
    .split(path.dirname(file) + path.sep)
    .join("");
}

interface SpoolRecord {
  kind: "metrics" | "steps" | "finish";
  batchId: string | null;
  body: Record<string, unknown>;
  rows?: number;
  tag?: string;
}

/** Runs the Python importer; resolves when it exits 0, else rejects with its own last error line. */
async function readUpload(ctx: JobContext, file: string, spoolDir: string, p: { format: string; project: string; name?: string }): Promise<void> {
  const python = process.env.TURNLENS_PYTHON ?? "python3";
  const args = ["-m", "turnlens.cli", "import", p.format, file, "--offline", "--spool", spoolDir, "--project", p.project];
  if (p.name) args.push("--name", p.name);
  const pythonPath = [path.join(REPO_ROOT, "clients", "python"), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  let lastError = "";
  const onLine = (line: string) => {
    if (!line.trim()) return;
    const own = line.startsWith("turnlens import: ");
    const text = withoutServerPaths(line, file);
    if (own) lastError = text.slice("turnlens import: ".length);
    ctx.log(own ? text.slice("turnlens ".length) : text);
  };
  // a cancel kills it at once: re-reading an upload loses nothing
  const env = { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: "1", TURNLENS_MODE: "offline" };
  const exit = await runChild(ctx, { command: python, args, cwd: REPO_ROOT, env, stopSignal: "SIGKILL", onLine }).catch((e: Error) => {
    throw new ImportFailed(`could not start the Python importer (${python}; set TURNLENS_PYTHON): ${e.message}`);
  });
  if (exit.stopped) throw new Error("import stopped");
  if (exit.code === 0) return;
  // a full disk (the CLI's EX_TEMPFAIL) is no fault of the upload: the job is re-queued for a later attempt
  if (exit.code === EX_TEMPFAIL) throw new ImportFailed(lastError || "the disk is full", true);
  throw new ImportFailed(lastError || `the Python importer ${exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`}`);
}

/** The lines of a JSONL file one at a time (a spool can be far larger than memory wants), with each line's size. */
async function* jsonLines<T>(file: string): AsyncGenerator<{ value: T; bytes: number }> {
  if (!fs.existsSync(file)) return;
  for await (const line of createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity })) {
    if (line.trim()) yield { value: JSON.parse(line) as T, bytes: Buffer.byteLength(line) + 1 };
  }
}

export const importUpload: JobRunner = async (ctx) => {
  const p = importPayloadSchema.parse(ctx.job.payload);
  const file = p.upload;
  if (!fs.existsSync(file)) throw new ImportFailed(`the uploaded file ${p.filename} is gone; upload it again`);
  const spoolDir = path.join(path.dirname(file), `spool-${ctx.job.id}-${ctx.job.attempts}`);
  fs.rmSync(spoolDir, { recursive: true, force: true });
  ctx.log(`import ${p.filename} (${p.bytes} bytes, sha256 ${p.sha256.slice(0, 12)}) as ${p.format} into project ${p.project}`);
  await ctx.progress(0.02, "reading the upload");
  try {
    await readUpload(ctx, file, spoolDir, p);
    if (ctx.signal.aborted) return { stopped: true };
    const spools = (fs.existsSync(spoolDir) ? fs.readdirSync(spoolDir).sort() : []).map((d) => path.join(spoolDir, d));
    const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
    const total = spools.reduce((n, d) => n + size(path.join(d, "records.jsonl")), 0);
    let done = 0;
    let sent = 0;
    const report: ImportReport = { runs: [], imported: 0, alreadyPresent: 0, replaced: 0, rejected: 0, rejectedRows: [] };
    const reject = (source: string, where: string, reason: string, rows = 1) => {
      report.rejected += rows;
      if (report.rejectedRows.length < REJECTED_SHOWN) report.rejectedRows.push({ source, where, reason });
    };
    await ctx.progress(READ_SHARE, `storing ${spools.length} run(s)`);
    // the file or folder inside the upload, e.g. "logs.tar.gz!run-1"
    const uploadDir = path.dirname(file) + path.sep;
    const inUpload = (source: string | undefined) => (source?.startsWith(uploadDir) ? source.slice(uploadDir.length) : (source ?? p.filename));
    for (const dir of spools) {
      if (!fs.existsSync(path.join(dir, "run.json"))) {
        // a source with nothing importable beside others that make runs: no run, its rows reported
        const { source } = JSON.parse(fs.readFileSync(path.join(dir, "source.json"), "utf8")) as { source?: string };
        for await (const { value: r } of jsonLines<{ where: string; reason: string }>(path.join(dir, "rejected.jsonl")))
          reject(inUpload(source), r.where, r.reason);
        continue;
      }
      const state = JSON.parse(fs.readFileSync(path.join(dir, "run.json"), "utf8")) as { create: Record<string, unknown> };
      let parsed = importRunSchema.safeParse(state.create);
      if (!parsed.success && parsed.error.issues.every((i) => i.path[0] === "startedAt" || i.path[0] === "finishedAt")) {
        // a source clock the server finds implausible (e.g. in the future): the run keeps the import's time
        ctx.log(`source times not kept (${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")})`, "warn");
        const { startedAt: _s, finishedAt: _f, ...rest } = state.create;
        parsed = importRunSchema.safeParse(rest);
      }
      if (!parsed.success)
        throw new ImportFailed(
          `the importer wrote a run the server refuses: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        );
      const create = parsed.data;
      const imp = (create.config as { turnlensImport?: { id?: string; source?: string } }).turnlensImport;
      if (!imp?.id) throw new ImportFailed(`${path.basename(dir)}/run.json: no config.turnlensImport.id (not an importer's spool)`);
      const source = inUpload(imp.source);
      // find or create in one fenced transaction: two attempts of this job never make two runs
      const { runId, created, name } = writeTransaction(ctx.fence, (db) => {
        const found = findImportedRun(db, create.project, imp.id!);
        if (found) return { runId: found.id, created: false, name: found.name };
        // the source's own times come with it: the run shows when it trained, not when it was uploaded
        const { runId } = createRun(importedRun(create), db);
        // a write key nobody holds: the run takes no writes from outside, only from a re-upload
        issueWriteKey(runId, db);
        return { runId, created: true, name: create.name };
      });
      ctx.log(`${created ? "created" : "found"} run ${name} (${runId}) for ${source}`);
      const entry = { runId, name, source, created, imported: 0, alreadyPresent: 0, replaced: 0, rejected: 0 };
      for await (const { value: r } of jsonLines<{ where: string; reason: string }>(path.join(dir, "rejected.jsonl"))) {
        entry.rejected++;
        reject(source, r.where, r.reason);
      }
      // values a later value of the same key and step overrode: counted, and the first few logged
      for await (const { value: r } of jsonLines<{ where: string; reason: string }>(path.join(dir, "replaced.jsonl"))) {
        if (entry.replaced++ < 5) ctx.log(`replaced ${r.where}: ${r.reason}`);
      }
      for await (const { value: rec, bytes } of jsonLines<SpoolRecord>(path.join(dir, "records.jsonl"))) {
        if (ctx.signal.aborted) return { stopped: true };
        const rows = rec.rows ?? 0;
        if (rec.kind === "finish") {
          const status = (TERMINAL_STATUSES as readonly string[]).includes(String(rec.body.status)) ? String(rec.body.status) : "succeeded";
          const ended = typeof rec.body.finishedAt === "string" && !Number.isNaN(Date.parse(rec.body.finishedAt)) ? new Date(rec.body.finishedAt) : new Date();
          writeTransaction(ctx.fence, (db) => finishImportedRunRow(runId, status, ended, db));
        } else {
          const bytes = Buffer.from(JSON.stringify(rec.batchId ? { ...rec.body, batchId: rec.batchId } : rec.body));
          const reply = writeTransaction(ctx.fence, (db) => handleIngest({ id: 0, kind: rec.kind as "metrics" | "steps", runId, bytes, databaseUrl: "" }, db));
          const failure = !reply.ok && reply.code ? Object.assign(new Error(reply.error), { code: reply.code }) : null;
          if (isDiskFull(failure)) throw failure; // not the rows' fault: the job is retried, and a retry stores nothing twice
          if (!reply.ok) {
            const issues = reply.issues
              .slice(0, 3)
              .map((i) => `; ${i.path}: ${i.message}`)
              .join("");
            entry.rejected += rows;
            reject(source, rec.tag ?? rec.kind, `refused ${rows} row(s): ${reply.error}${issues}`, rows);
          } else if (reply.status === 200) entry.alreadyPresent += rows;
          else entry.imported += rows;
        }
        done += bytes;
        if (++sent % 20 === 0)
          await ctx.progress(
            READ_SHARE + (1 - READ_SHARE) * (done / Math.max(1, total)),
            `stored ${sent} request(s) (${Math.round((100 * done) / Math.max(1, total))} % of the spool)`,
          );
      }
      if (created && entry.imported === 0 && entry.alreadyPresent === 0) {
        // every request was refused: an empty run would look like a successful import of nothing
        await deleteRun(runId);
        ctx.log(`run ${name}: every row was refused; the run was removed again`, "warn");
        report.replaced += entry.replaced;
        continue;
      }
      report.imported += entry.imported;
      report.alreadyPresent += entry.alreadyPresent;
      report.replaced += entry.replaced;
      report.runs.push(entry);
      ctx.log(
        `run ${name}: ${entry.imported} row(s) imported, ${entry.alreadyPresent} already present, ${entry.replaced} replaced, ${entry.rejected} rejected`,
      );
    }
    ctx.log(
      `done: ${report.imported} row(s) imported, ${report.alreadyPresent} already present, ${report.replaced} replaced, ${report.rejected} rejected, ${report.runs.length} run(s)`,
    );
    return report;
  } finally {
    fs.rmSync(spoolDir, { recursive: true, force: true });
  }
};
