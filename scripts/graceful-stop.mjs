// How the web server (scripts/web-server.mjs) stops on SIGTERM or SIGINT: requests in flight finish,
// and then every connection is closed, within `graceMs` at most. Node's server.close() alone only
// refuses new connections: a keep-alive client that keeps sending requests was served to the end,
// so during a restart two servers wrote to one SQLite file. Here, once stopping:
//   - no new connections (server.close()), and idle keep-alive connections are closed at once;
//   - a request in flight is finished, its response says `Connection: close`, and its connection is
//     closed when the response is done;
//   - a request that arrives on an open connection anyway gets 503 with `Connection: close` and
//     `Retry-After` (clients retry it on the next server);
//   - after `graceMs`, whatever is still open is closed (a request that never ends cannot hold the stop).
import http from "node:http";
import { answer } from "./early-answer.mjs";

/** Milliseconds a stop waits for requests in flight (TURNLENS_STOP_GRACE_MS, default 10 s). */
export function stopGraceMs(env = process.env) {
  const ms = Number(env.TURNLENS_STOP_GRACE_MS ?? 10_000);
  return Number.isFinite(ms) && ms >= 0 ? ms : 10_000;
}

/**
 * An http.Server serving `handler` that can be stopped gracefully: `stop()` resolves once every
 * connection is closed (at most `graceMs` after it was called); calling it again returns the same promise.
 */
export function gracefulServer(options, handler, { graceMs = stopGraceMs() } = {}) {
  let stopping = null;
  const inFlight = new Set();
  const server = http.createServer(options, (req, res) => {
    if (stopping) {
      // a body still arriving is discarded until the grace period closes every connection (scripts/early-answer.mjs)
      const body = Buffer.from(JSON.stringify({ error: "the server is stopping; retry the request", issues: [] }));
      answer(req, res, 503, { "content-type": "application/json", connection: "close", "retry-after": "1" }, body, performance.now() + graceMs);
      return;
    }
    inFlight.add(res);
    res.on("close", () => {
      inFlight.delete(res);
      // its connection is idle now: closed at once while stopping
      if (stopping) setImmediate(() => server.closeIdleConnections());
    });
    handler(req, res);
  });

  function stop() {
    stopping ??= new Promise((resolve) => {
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      timer.unref();
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      // responses not yet started end their connection; started ones are closed once done (above)
      for (const res of inFlight) if (!res.headersSent) res.setHeader("connection", "close");
      server.closeIdleConnections();
    });
    return stopping;
  }
  return { server, stop };
}
