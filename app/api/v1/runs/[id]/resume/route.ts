import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { getRun } from "@/lib/db/runs";
import { assertExternalWrite, resumeImportedRun } from "@/lib/ingest/write-access";

/** Reopens a finished imported run so its trainer can write again (the client's `resume`). */
export const POST = route(routes.runResume, ({ req, params }) => {
  assertExternalWrite(params.id, req.headers, { allowFinished: true });
  resumeImportedRun(params.id);
  return getRun(params.id);
});
