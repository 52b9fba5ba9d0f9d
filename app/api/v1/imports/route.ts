import { readBodyChunks, route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { enqueueImport, listImports, storeUpload } from "@/lib/runs/imports";

export const GET = route(routes.importsList, ({ query }) => listImports(query.page, query.pageSize));

/** The file's bytes are the body (streamed to the upload dir, never held whole); the import runs as a job. */
export const POST = route(
  routes.importUpload,
  async ({ req, query }) => {
    const limit = routes.importUpload.maxBodyBytes!;
    const stored = await storeUpload(query.filename, (write) => readBodyChunks(req, limit, write, "uploads: TURNLENS_MAX_UPLOAD_MB"));
    return enqueueImport(query, stored);
  },
  { streamBody: true },
);
