// Entry of the ingest worker thread, and of its compression thread (workerData.role "compress"):
// each runs its module from source through tsx, the same way the job worker runs (Next.js's bundle
// is not involved).
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData?.role === "compress" ? "./compress-thread.ts" : "./thread.ts");
