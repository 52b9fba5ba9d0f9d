// /api/v1 requests go straight to their route handler (scripts/web-server.mjs), the same compiled
// module `next build` wrote and Next itself loads, so there is one copy of lib/ in the process.
//
// Why: Next's request pipeline around a route handler (routing, its request and response
// wrappers, async-context bookkeeping) cost about 0.8 ms of a request's CPU, a third of an
// average read's, and every check a request needs already runs inside the handler's wrapper
// (lib/api/route.ts: Host, token, CSRF, limits, schemas). Pages, HEAD and OPTIONS stay with Next.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(import.meta.url);
let NextRequest;

/**
 * A dispatcher for the API's compiled route handlers under `<distDir>/server/app/api/v1`:
 * `dispatch(req, res)` serves the request and returns true, or returns false when no compiled route
 * has a handler for its path and method (Next serves it then). Call it after Next's `app.prepare()`.
 */
export function apiDispatcher(distDir = ".next") {
  // loaded once Next's server has set up its async context (next/server needs it)
  NextRequest = require("next/server").NextRequest;
  const base = path.resolve(distDir, "server/app/api/v1");
  const routes = [];
  (function walk(dir, segments) {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(dir, e.name), [...segments, e.name]);
      else if (e.name === "route.js") routes.push({ segments, file: path.join(dir, e.name), handlers: null });
    }
  })(base, []);
  // A literal segment wins over a parameter at the same place (/runs/filters before /runs/[id]).
  const rank = (r) => r.segments.map((s) => (s.startsWith("[") ? "1" : "0")).join("");
  routes.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));

  function match(pathname) {
    const parts = pathname.split("/").filter(Boolean);
    for (const r of routes) {
      if (r.segments.length !== parts.length) continue;
      const params = {};
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const s = r.segments[i];
        if (s.startsWith("[")) params[s.slice(1, -1)] = parts[i];
        else ok = s === parts[i];
      }
      if (ok) return { route: r, params };
    }
    return null;
  }

  /** Whether a compiled route file exists for an API path template such as `/runs/{id}` (a startup check). */
  const compiled = (template) => routes.some((r) => "/" + r.segments.join("/") === template.replace(/\{(\w+)\}/g, "[$1]"));

  function dispatch(req, res, pathname) {
    const m = match(pathname.slice("/api/v1".length));
    if (!m) return false;
    if (m.route.handlers === null) {
      try {
        m.route.handlers = require(m.route.file).routeModule?.userland ?? {};
      } catch (e) {
        // a build of another layout: Next serves this route (slower, not wrong)
        console.error(`api-dispatch: ${m.route.file} did not load (${e?.message ?? e}); Next serves it`);
        m.route.handlers = {};
      }
    }
    const handler = m.route.handlers[req.method];
    if (typeof handler !== "function") return false;
    serve(handler, req, res, m.params).catch((e) => {
      // the route wrapper answers every error itself: this is a broken connection or a bug
      console.error(`api-dispatch: ${req.method} ${pathname}: ${e?.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: "internal error", issues: [] }));
      else res.destroy();
    });
    return true;
  }
  return Object.assign(dispatch, { compiled });
}

async function serve(handler, req, res, rawParams) {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const request = new NextRequest(requestUrl(req), {
    method: req.method,
    headers,
    ...(hasBody ? { body: nodeBody(req), duplex: "half" } : {}),
  });
  // Next decodes path parameters before the handler sees them; a malformed one rejects here as there
  const params = new Promise((resolve, reject) => {
    try {
      resolve(Object.fromEntries(Object.entries(rawParams).map(([k, v]) => [k, decodeURIComponent(v)])));
    } catch (e) {
      reject(e);
    }
  });
  params.catch(() => {});
  const response = await handler(request, { params });
  const out = {};
  response.headers.forEach((v, k) => {
    if (k === "set-cookie") return;
    out[k] = v;
  });
  const cookies = response.headers.getSetCookie?.() ?? [];
  if (cookies.length) out["set-cookie"] = cookies;
  const reader = response.body?.getReader();
  const first = reader ? await reader.read() : { done: true };
  const second = first.done ? first : await reader.read();
  if (second.done) {
    // the whole answer at once (every JSON answer): one write with its length
    const body = first.done ? Buffer.alloc(0) : first.value;
    out["content-length"] = String(body.byteLength);
    res.writeHead(response.status, out).end(body);
    return;
  }
  // a streamed answer (a metric export): written as it comes, at the pace the client reads
  res.writeHead(response.status, out);
  res.on("close", () => reader.cancel().catch(() => {}));
  for (let chunk = first; !chunk.done; chunk = chunk === first ? second : await reader.read()) {
    if (!res.write(chunk.value)) await new Promise((resolve) => res.once("drain", resolve).once("close", resolve));
    if (res.destroyed) return;
  }
  res.end();
}

/**
 * The request's URL on its Host. A Host that makes no URL (`a b`) gets a placeholder origin: the
 * header itself reaches the handler unchanged, whose Host check refuses it (403) as any foreign one.
 */
function requestUrl(req) {
  try {
    return new URL(`http://${req.headers.host ?? "localhost"}${req.url}`);
  } catch {
    return new URL(`http://host.invalid${req.url}`);
  }
}

/**
 * The request body as a web stream that reads the socket as the handler asks for more. When the
 * handler stops early (a body over its limit), the rest is read and dropped so the connection can
 * carry the answer and the next request.
 */
function nodeBody(req) {
  let detach = () => {};
  return new ReadableStream({
    start(controller) {
      const onData = (chunk) => {
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (controller.desiredSize <= 0) req.pause();
      };
      const onEnd = () => {
        detach();
        controller.close();
      };
      const onError = (e) => {
        detach();
        controller.error(e);
      };
      detach = () => req.off("data", onData).off("end", onEnd).off("error", onError);
      req.on("data", onData).on("end", onEnd).on("error", onError);
      req.on("error", () => {}); // a client gone mid-body, after the handler stopped reading: nothing to do
      req.pause();
    },
    pull() {
      req.resume();
    },
    cancel() {
      detach();
      req.resume();
    },
  });
}
