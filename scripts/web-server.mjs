// The dashboard's HTTP server: Next.js's own request handler behind a thin front that answers what
// Next would turn into a plain-text 500 (methods it does not support, such as TRACE, and paths
// whose percent-encoding is malformed, such as /runs/%ff) with a JSON 405 or 400 first. The front
// starts requests in arrival order (scripts/request-turns.mjs) and hands /api/v1 straight to its
// compiled route handler (scripts/api-dispatch.mjs); pages go to Next.
//   node scripts/web-server.mjs   (env: TURNLENS_HOST, PORT, TURNLENS_STOP_GRACE_MS, TURNLENS_BODY_TIMEOUT_MS, TURNLENS_SERVER_PROCESSES;
//   run from the project root after `next build`)
import cluster from "node:cluster";
import next from "next";
import { register } from "tsx/esm/api";
import { gracefulServer } from "./graceful-stop.mjs";
import { inTurn } from "./request-turns.mjs";
import { apiRoutes } from "./api-dispatch.mjs";
import { answer } from "./early-answer.mjs";

// TURNLENS_SERVER_PROCESSES (default 1): that many server processes share the port (node:cluster
// hands each new connection to one of them). lib/db's calls are synchronous, so one process serves
// one query at a time; on PostgreSQL it then waits on the socket while the database works, and on
// either store a heavy read (a chart's buckets) holds every other reader of that process. More
// processes serve reads side by side: each has its own connection, its own ingest workers and its
// own ingest queue (TURNLENS_INGEST_QUEUE is per process). A stop signal to the primary stops every
// process gracefully.
const processes = Math.max(1, Math.floor(Number(process.env.TURNLENS_SERVER_PROCESSES ?? 1)) || 1);
if (processes > 1 && cluster.isPrimary) {
  let stopping = false;
  let started = 0;
  const fork = () => cluster.fork().on("listening", () => ++started === processes && console.log(`web-server: ${processes} processes serving`));
  for (let i = 0; i < processes; i++) fork();
  cluster.on("exit", (w, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    } else {
      // a process that died is replaced; one that could not start at all stops the server
      console.error(`web-server: process ${w.process.pid} exited (${signal ?? `code ${code}`})`);
      if (started < processes) process.exit(1);
      fork();
    }
  });
  for (const sig of ["SIGTERM", "SIGINT"])
    process.on(sig, () => {
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGTERM");
    });
  await new Promise(() => {}); // the primary serves nothing itself
}

register();
// Refuse to start on a store the app cannot serve yet (lib/db/url.ts says why) instead of failing per request.
try {
  (await import("../lib/db/url.ts")).assertStoreServable();
} catch (e) {
  console.error(`web-server: ${e.message}`);
  process.exit(1);
}
// Steps whose deferred work (search index, credit summary) a stop cut off are finished before serving (lib/runs/pending-steps.ts).
try {
  const n = (await import("../lib/runs/pending-steps.ts")).finishPendingSteps();
  if (n) console.log(`web-server: finished the deferred work of ${n} stored step(s)`);
} catch (e) {
  console.error(`web-server: could not finish stored steps' deferred work (${e.message}); their reads do it instead`);
}
// Alerts' webhooks are posted from here, in the background, never inside an ingest request (lib/runs/alert-webhooks.ts).
(await import("../lib/runs/alert-webhooks.ts")).startWebhookLoop();
const { ROUTES } = await import("../lib/api/routes.ts");
const { bodyTimeoutMs } = await import("../lib/api/body-timeout.ts");
const BODY_TIMEOUT_MS = bodyTimeoutMs();

const hostname = process.env.TURNLENS_HOST || "127.0.0.1";
const port = Number(process.env.PORT || 3000);
const METHODS = new Set(["GET", "HEAD", "POST", "DELETE", "OPTIONS", "PUT", "PATCH"]);

const app = next({ dev: false, hostname, port });
const handle = app.getRequestHandler();
await app.prepare();
// The API's route table, from the route declarations (lib/api/routes.ts) and the compiled handlers.
const api = apiRoutes(ROUTES, ".next", { bodyTimeoutMs: BODY_TIMEOUT_MS });
if (api.uncompiled.length) console.error(`web-server: no compiled route file for ${api.uncompiled.join(", ")}; Next serves these`);

// a body the refusal leaves unread is discarded, within the body timeout (scripts/early-answer.mjs)
function refuse(req, res, status, error, path, headers = {}) {
  const body = Buffer.from(JSON.stringify({ error, issues: [{ path, message: error }] }));
  answer(req, res, status, { "content-type": "application/json", ...headers }, body, performance.now() + BODY_TIMEOUT_MS);
}

// Requests start one per event-loop turn, in arrival order (scripts/request-turns.mjs says why).
// The request line and headers may take 256 KB (Node's default is 16 KB): the longest documented
// query, a trajectory search by a 10,000-character anchor, is up to 90 KB percent-encoded (9 bytes
// a character), and a parameter past its documented length should still reach its 400 that names it.
const MAX_HEADER_BYTES = 256 * 1024;
const { server, stop } = gracefulServer(
  { maxHeaderSize: MAX_HEADER_BYTES },
  inTurn((req, res) => {
    if (!METHODS.has(req.method))
      return refuse(req, res, 405, `method ${req.method} is not supported`, "method", { allow: "GET, HEAD, POST, DELETE, OPTIONS" });
    const pathname = (req.url ?? "/").split("?")[0];
    try {
      decodeURIComponent(pathname);
    } catch {
      return refuse(req, res, 400, "malformed path: a segment is not valid percent-encoding", "params");
    }
    const m = api.match(pathname);
    if (m) {
      // a method the path does not declare is a 405 that lists the ones it does (RFC 9110's Allow header)
      if (!m.route.methods.has(req.method))
        return refuse(req, res, 405, `${req.method} is not allowed on ${pathname}`, "method", { allow: [...m.route.methods].join(", ") });
      // the API's handlers without Next's pipeline (scripts/api-dispatch.mjs); a trailing slash stays Next's redirect
      if (!pathname.endsWith("/") && api.dispatch(req, res, m)) return;
    }
    handle(req, res);
  }),
);
// What Node's parser refuses before any handler runs gets Node's status with a JSON body naming why.
server.on("clientError", (err, socket) => {
  if (!socket.writable || err.code === "ECONNRESET") return socket.destroy();
  const [status, reason, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", `the request line and headers exceed ${MAX_HEADER_BYTES / 1024} KB`]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "the request did not arrive in time"]
        : [400, "Bad Request", "malformed HTTP request"];
  const body = JSON.stringify({ error: message, issues: [{ path: "headers", message }] });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
});
// Next's defaults for `next start`: keep-alive longer than common load balancers' idle timeout.
server.keepAliveTimeout = 65_000;
server.listen(port, hostname, () => console.log(`TurnLens web server on http://${hostname}:${port}`));
// Requests in flight finish, keep-alive clients are closed, all within TURNLENS_STOP_GRACE_MS
// (scripts/graceful-stop.mjs): a restarted server never writes beside this one.
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => stop().then(() => process.exit(0)));
