import { route, Ok } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { discardHeldParts } from "@/lib/ingest/batches";
import { runIngest } from "@/lib/ingest/pool";
import { admitExternalWrite, assertExternalWrite } from "@/lib/ingest/write-access";

/** Ingest one part of a step too large for one request; the step is stored whole when its last part arrives (lib/ingest/batches.ts ingestStepPart). */
export const POST = route(
  routes.stepPartWrite,
  async ({ req, params, bodyBytes }) => {
    assertExternalWrite(params.id, req.headers);
    const r = await runIngest("stepPart", params.id, bodyBytes);
    return new Ok(r.body, r.status);
  },
  { rawBody: true, admit: admitExternalWrite },
);

/** Drop the waiting parts of a step that never completed (lib/ingest/batches.ts discardHeldParts). */
export const DELETE = route(routes.stepPartsDiscard, ({ req, params, query }) => {
  assertExternalWrite(params.id, req.headers);
  return discardHeldParts(params.id, query.step);
});
