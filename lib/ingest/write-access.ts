// Who may write into a run through the ingest API. Runs that TurnLens's workers produce are theirs
// alone, except a trainer job's run: the command it launched writes with the key the worker gave it
// (TURNLENS_WRITE_KEY), while the job runs. An imported run takes writes only with the write key it was created with, and only while it
// is running (a finished run is reopened explicitly with POST /runs/{id}/resume).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { ConflictError, ForbiddenError, NotFoundError } from "../schemas/errors";
import { getRawDb, type RawDb } from "../db/raw";
import { reopenImportedRun, runOwner, setWriteKeyHash } from "../db/runs";
import { admitIngest } from "./pool";

export const WRITE_KEY_HEADER = "x-turnlens-write-key";

const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

/** Creates the run's write key; only its hash is stored, the key is returned once. */
export function issueWriteKey(runId: string, db: RawDb = getRawDb()): string {
  const key = `tlw_${randomBytes(24).toString("base64url")}`;
  setWriteKeyHash(runId, hashKey(key), db);
  return key;
}

/**
 * Throws unless an external writer may write into the run now: 404 unknown run, 409 a worker's run
 * or a finished one (unless `allowFinished`), 403 a missing or wrong write key.
 */
export function assertExternalWrite(runId: string, headers: Headers, opts: { allowFinished?: boolean } = {}, db: RawDb = getRawDb()): void {
  const run = runOwner(runId, db);
  if (!run) throw new NotFoundError("run", runId);
  // A trainer job's run takes its launched process's writes, with the key the worker minted for this attempt.
  const launched = run.jobKind === "trainer" && run.writeKeyHash !== null;
  if (!launched && (run.jobKind !== null || run.kind !== "imported"))
    throw new ConflictError(
      `run ${runId} is produced by a TurnLens worker (job kind "${run.jobKind ?? run.kind}"); it takes no external writes: create your own run with POST /runs/import`,
      [{ path: "params.id", message: `owned by the ${run.jobKind ?? run.kind} job` }],
    );
  if (run.writeKeyHash !== null) {
    const got = headers.get(WRITE_KEY_HEADER) ?? "";
    const a = Buffer.from(hashKey(got));
    const b = Buffer.from(run.writeKeyHash);
    if (!got || a.length !== b.length || !timingSafeEqual(a, b))
      throw new ForbiddenError(`writes to run ${runId} need its write key (the \`writeKey\` POST /runs/import returned) in the X-TurnLens-Write-Key header`, [
        { path: "headers.x-turnlens-write-key", message: got ? "wrong write key" : "missing" },
      ]);
  }
  if (!opts.allowFinished && run.status !== "running")
    throw new ConflictError(`run ${runId} is ${run.status}: it takes no more writes; reopen it with POST /runs/${runId}/resume`, [
      { path: "params.id", message: `run is ${run.status}` },
    ]);
}

/**
 * An ingest route's admission (lib/api/route.ts `admit`), before the body is read: the run and its
 * write key from the path and headers (404, 409, 403), then an ingest slot (429). A writer without
 * the key is refused unread and never holds one of the TURNLENS_INGEST_QUEUE slots, however slowly
 * it sends. The handler checks the run again once the body is in: it may have finished meanwhile.
 */
export function admitExternalWrite({ req, params }: { req: Request; params: Record<string, unknown> }): () => void {
  assertExternalWrite(String(params.id), req.headers);
  return admitIngest();
}

/** Reopens a finished imported run for writes (the client's `resume`). */
export function resumeImportedRun(runId: string, db: RawDb = getRawDb()): void {
  reopenImportedRun(runId, db);
}
