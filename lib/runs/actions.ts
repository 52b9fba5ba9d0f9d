// Run actions the UI and API offer: cancel, retry (through the run's job), finish an imported run.
import type { z } from "zod";
import { finishRunningImportedRun } from "../db/run-actions";
import { getRun } from "../db/runs";
import { ConflictError } from "../schemas/errors";
import { requestCancel, retry } from "../jobs";
import type { finishRunSchema, RunOut } from "../schemas/runs";

function jobOf(run: RunOut): string {
  if (!run.jobId) throw new ConflictError(`run ${run.id} is an imported run: it has no job to ${"cancel or retry"}; use POST /runs/${run.id}/finish`);
  return run.jobId;
}

export async function cancelRun(runId: string): Promise<RunOut> {
  await requestCancel(jobOf(getRun(runId)));
  return getRun(runId);
}

export async function retryRun(runId: string): Promise<RunOut> {
  await retry(jobOf(getRun(runId)));
  return getRun(runId);
}

/** External trainers mark their imported run finished. */
export async function finishImportedRun(runId: string, body: z.infer<typeof finishRunSchema>): Promise<RunOut> {
  // a launched trainer's client finishing: its job's exit code sets the run's status, not the client
  const launched = getRun(runId);
  if (launched.jobKind === "trainer") return launched;
  const finished = finishRunningImportedRun(runId, {
    status: body.status,
    error: body.error ?? null,
    finishedAt: body.finishedAt ? new Date(body.finishedAt) : null,
    now: new Date(),
  });
  if (!finished) {
    const run = getRun(runId); // throws NotFoundError
    throw new ConflictError(`run ${run.id} is a ${run.kind} run with status ${run.status}: only running imported runs can be finished`);
  }
  return getRun(runId);
}
