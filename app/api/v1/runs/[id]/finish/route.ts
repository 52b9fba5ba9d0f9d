import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertExternalWrite } from "@/lib/ingest/write-access";
import { finishImportedRun } from "@/lib/runs/actions";

export const POST = route(routes.runFinish, ({ req, params, body }) => {
  assertExternalWrite(params.id, req.headers);
  return finishImportedRun(params.id, body);
});
