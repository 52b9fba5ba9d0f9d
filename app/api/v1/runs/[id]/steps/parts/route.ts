import { route, Ok } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
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
