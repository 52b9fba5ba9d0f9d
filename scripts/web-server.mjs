// The dashboard's HTTP server: Next.js's own request handler behind a thin front that answers what
// Next would turn into a plain-text 500 (methods it does not support, such as TRACE, and paths
// whose percent-encoding is malformed, such as /runs/%ff) with a JSON 405 or 400 first.
//   node scripts/web-server.mjs   (env: TURNLENS_HOST, PORT; run from the project root after `next build`)
import http from "node:http";
import next from "next";

const hostname = process.env.TURNLENS_HOST || "127.0.0.1";
const port = Number(process.env.PORT || 3000);
const METHODS = new Set(["GET", "HEAD", "POST", "DELETE", "OPTIONS", "PUT", "PATCH"]);

const app = next({ dev: false, hostname, port });
const handle = app.getRequestHandler();
await app.prepare();

function refuse(res, status, error, path, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ error, issues: [{ path, message: error }] }));
}

const server = http.createServer((req, res) => {
  if (!METHODS.has(req.method)) return refuse(res, 405, `method ${req.method} is not supported`, "method", { allow: "GET, HEAD, POST, DELETE, OPTIONS" });
  const pathname = (req.url ?? "/").split("?")[0];
  try {
    decodeURIComponent(pathname);
  } catch {
    return refuse(res, 400, "malformed path: a segment is not valid percent-encoding", "params");
  }
  handle(req, res);
});
// Next's defaults for `next start`: keep-alive longer than common load balancers' idle timeout.
server.keepAliveTimeout = 65_000;
server.listen(port, hostname, () => console.log(`TurnLens web server on http://${hostname}:${port}`));
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => server.close(() => process.exit(0)));
