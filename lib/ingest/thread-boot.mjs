// Entry of the ingest worker thread: the thread runs lib/ingest/thread.ts from source through tsx,
// the same way the job worker runs (Next.js's bundle is not involved).
import { register } from "tsx/esm/api";

register();
await import("./thread.ts");
