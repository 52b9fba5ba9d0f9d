import { route, Ok } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { runIngest } from "@/lib/ingest/pool";
import { admitExternalWrite, assertExternalWrite } from "@/lib/ingest/write-access";

/** Ingest several steps (in increasing order, each once) in one request (one round trip and one commit for several steps), parsed and stored by the ingest thread. */
export const POST = route(
  routes.stepsBatchWrite,
  async ({ req, params, bodyBytes }) => {
    assertExternalWrite(params.id, req.headers);
    const r = await runIngest("stepsBatch", params.id, bodyBytes);
    return new Ok(r.body, r.status);
  },
  { rawBody: true, admit: admitExternalWrite },
);
