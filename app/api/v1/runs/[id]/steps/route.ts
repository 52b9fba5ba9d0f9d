import { route, Ok } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { listSteps } from "@/lib/db/rollouts";
import { runIngest } from "@/lib/ingest/pool";
import { admitExternalWrite, assertExternalWrite } from "@/lib/ingest/write-access";

export const GET = route(routes.stepsList, ({ params, query }) => {
  assertRunExists(params.id);
  return { ...listSteps(params.id, query.page, query.pageSize), page: query.page, pageSize: query.pageSize };
});

/** Ingest one step's rollouts (external trainers), parsed and stored by the ingest thread: identical retry 200, other content 409. */
export const POST = route(
  routes.stepsWrite,
  async ({ req, params, bodyBytes }) => {
    assertExternalWrite(params.id, req.headers);
    const r = await runIngest("steps", params.id, bodyBytes);
    return new Ok(r.body, r.status);
  },
  { rawBody: true, admit: admitExternalWrite },
);
