// A process that stores one step through the ingest worker's own entry (handleIngest) and, with
// "die", kills itself with SIGKILL the moment the answer is made: after the step's write committed
// and before its deferred work (lib/ingest/deferred.ts) had a turn of the event loop. Without "die"
// it exits when that work is done.
//   node --import tsx test/helpers/ingest-step-child.ts RUN_ID STEP_JSON_FILE die|finish
import fs from "node:fs";
import { handleIngest } from "../../lib/ingest/thread";

const [runId, file, mode] = process.argv.slice(2);
const reply = handleIngest({ id: 1, kind: "steps", runId, bytes: fs.readFileSync(file), databaseUrl: process.env.DATABASE_URL! });
if (!reply.ok) {
  console.error(reply.error);
  process.exit(2);
}
if (mode === "die") process.kill(process.pid, "SIGKILL");
