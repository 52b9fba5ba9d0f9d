import { route, Ok } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { listSeries } from "@/lib/db/metric-series";
import { runIngest } from "@/lib/ingest/pool";
import { admitExternalWrite, assertExternalWrite } from "@/lib/ingest/write-access";

/** The run's metric keys with their summaries. */
export const GET = route(routes.metricsKeys, ({ params }) => {
  assertRunExists(params.id);
  return { keys: listSeries(params.id) };
});

/** W&B-shaped logging: `{points: [{step, values: {key: value}}], batchId?}`, parsed and stored by the ingest thread. */
export const POST = route(
  routes.metricsLog,
  async ({ req, params, bodyBytes }) => {
    assertExternalWrite(params.id, req.headers);
    const r = await runIngest("metrics", params.id, bodyBytes);
    return new Ok(r.body, r.status);
  },
  { rawBody: true, admit: admitExternalWrite },
);
