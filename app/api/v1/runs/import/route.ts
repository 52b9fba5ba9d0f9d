import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { getRun } from "@/lib/db/runs";
import { issueWriteKey } from "@/lib/ingest/write-access";
import { importRun } from "@/lib/runs/launch";

/** A run for an external trainer; its write key is in this answer only. */
export const POST = route(routes.runsImport, async ({ body }) => {
  const { runId } = await importRun(body);
  const writeKey = issueWriteKey(runId);
  return { ...getRun(runId), writeKey };
});
