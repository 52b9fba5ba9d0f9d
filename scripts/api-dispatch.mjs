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
import { answer } from "./early-answer.mjs";

const require = createRequire(import.meta.url);
let ApiRequest;
const API = "/api/v1";

/**
 * The request a handler gets: a Request with what NextRequest adds (nextUrl, cookies, the URL as
 * NextURL normalises it) made on first use. NextRequest's constructor parses the URL again, copies
 * the headers and reads the cookies, ~0.05 ms of a request's CPU that most handlers never use.
 */
function apiRequestClass() {
  const { NextURL } = require("next/dist/server/web/next-url");
  const { toNodeOutgoingHttpHeaders } = require("next/dist/server/web/utils");
  const { RequestCookies } = require("next/dist/server/web/spec-extension/cookies");
  const noNormalize = !!process.env.__NEXT_NO_MIDDLEWARE_URL_NORMALIZE;
  return class ApiRequest extends Request {
    #url;
    #nextUrl;
    #cookies;
    /** `url`: a URL object (requestUrl made it, so it is valid: NextRequest's validateURL is not needed) */
    constructor(url, init) {
      super(url, init);
      this.#url = url.href;
    }
    get nextUrl() {
      this.#nextUrl ??= new NextURL(this.#url, { headers: toNodeOutgoingHttpHeaders(this.headers) });
      return this.#nextUrl;
    }
    get cookies() {
      this.#cookies ??= new RequestCookies(this.headers);
      return this.#cookies;
    }
    get url() {
      return noNormalize ? this.#url : this.nextUrl.toString();
    }
  };
}

/**
 * The API's one route table: each path template the route declarations name (lib/api/routes.ts
 * `ROUTES`, `{ method, path }` with paths such as `/runs/{id}`), its declared methods, and the
 * handler module `next build` compiled for it (`<distDir>/server/app/api/v1/runs/[id]/route.js`),
 * if there is one. The web server asks it both questions about a request, from one match:
 * - `match(pathname)`: the template an `/api/v1` path falls under (a trailing slash allowed) with its
 *   declared methods (a method outside them is a 405) and path parameters, or null;
 * - `dispatch(req, res, match)`: serves the request from the compiled handler and returns true, or
 *   returns false when there is none for the method (Next serves it then).
 * Call it after Next's `app.prepare()`. `bodyTimeoutMs` (lib/api/body-timeout.ts) bounds how long a
 * request's body is read or, after an answer sent before it ended, discarded (scripts/early-answer.mjs).
 */
export function apiRoutes(declarations, distDir = ".next", { bodyTimeoutMs = 60_000 } = {}) {
  // loaded once Next's server has set up its async context (next's modules need it)
  ApiRequest ??= apiRequestClass();
  const base = path.resolve(distDir, "server/app/api/v1");
  const byPath = new Map();
  for (const d of declarations) {
    let route = byPath.get(d.path);
    if (!route) {
      const segments = d.path.split("/").slice(1);
      const file = path.join(base, ...segments.map((s) => s.replace(/^\{(\w+)\}$/, "[$1]")), "route.js");
      route = { path: d.path, segments, methods: new Set(["OPTIONS"]), file: fs.existsSync(file) ? file : null, handlers: null };
      byPath.set(d.path, route);
    }
    route.methods.add(d.method);
    if (d.method === "GET") route.methods.add("HEAD");
  }
  // A literal segment wins over a parameter at the same place (/runs/filters before /runs/{id}).
  const rank = (r) => r.segments.map((s) => (s.startsWith("{") ? "1" : "0")).join("");
  const routes = [...byPath.values()].sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));

  function match(pathname) {
    if (!pathname.startsWith(API + "/")) return null;
    const parts = pathname
      .slice(API.length + 1)
      .replace(/\/$/, "")
      .split("/");
    if (parts.some((p) => p === "")) return null;
    for (const route of routes) {
      if (route.segments.length !== parts.length) continue;
      const params = {};
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const s = route.segments[i];
        if (s.startsWith("{")) params[s.slice(1, -1)] = parts[i];
        else ok = s === parts[i];
      }
      if (ok) return { route, params };
    }
    return null;
  }

  function dispatch(req, res, m) {
    const { route } = m;
    if (!route.file) return false;
    if (route.handlers === null) {
      try {
        route.handlers = require(route.file).routeModule?.userland ?? {};
      } catch (e) {
        // a build of another layout: Next serves this route (slower, not wrong)
        console.error(`api-dispatch: ${route.file} did not load (${e?.message ?? e}); Next serves it`);
        route.handlers = {};
      }
    }
    const handler = route.handlers[req.method];
    if (typeof handler !== "function") return false;
    serve(handler, req, res, m.params, performance.now() + bodyTimeoutMs).catch((e) => {
      // the route wrapper answers every error itself: this is a broken connection or a bug
      console.error(`api-dispatch: ${req.method} ${req.url}: ${e?.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: "internal error", issues: [] }));
      else res.destroy();
    });
    return true;
  }

  /** Declared paths without a compiled route file (a startup warning: Next serves them). */
  const uncompiled = routes.filter((r) => !r.file).map((r) => r.path);
  return { match, dispatch, uncompiled };
}

async function serve(handler, req, res, rawParams, deadline) {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const body = hasBody ? nodeBody(req) : null;
  const request = new ApiRequest(requestUrl(req), {
    method: req.method,
    headers,
    ...(body ? { body: body.stream, duplex: "half" } : {}),
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
  // whatever of the body the handler left unread is not wanted (scripts/early-answer.mjs)
  body?.discard();
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
    // the whole answer at once (every JSON answer), also when it comes before the body has ended (a refusal)
    answer(req, res, response.status, out, first.done ? Buffer.alloc(0) : first.value, deadline);
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
 * The request's URL on its Host. A Host that is not a plain `name[:port]` (`a b`, or with user-info
 * such as `127.0.0.1@evil.example`, which a URL reads as credentials and a Request refuses) gets a
 * placeholder origin: the header itself reaches the handler unchanged, whose Host check refuses it
 * (403) as any foreign one.
 */
function requestUrl(req) {
  const host = req.headers.host ?? "localhost";
  if (/^[^@/\\?#\s]+$/.test(host)) {
    try {
      return new URL(`http://${host}${req.url}`);
    } catch {
      /* the placeholder below */
    }
  }
  return new URL(`http://host.invalid${req.url}`);
}

/**
 * The request body as a web stream that reads the socket as the handler asks for more, and
 * `discard()`, which detaches the stream from the socket once the handler has answered; what it did
 * not read is then dropped (scripts/early-answer.mjs).
 */
function nodeBody(req) {
  let detach = () => {};
  let controller;
  const stream = new ReadableStream({
    start(c) {
      controller = c;
      const onData = (chunk) => {
        c.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (c.desiredSize <= 0) req.pause();
      };
      const onEnd = () => {
        detach();
        c.close();
      };
      const onError = (e) => {
        detach();
        c.error(e);
      };
      detach = () => {
        req.off("data", onData).off("end", onEnd).off("error", onError);
        detach = () => {};
      };
      req.on("data", onData).on("end", onEnd).on("error", onError);
      req.on("error", () => {}); // a client gone mid-body, after the handler stopped reading: nothing to do
      req.pause();
    },
    pull() {
      req.resume();
    },
    cancel() {
      detach();
    },
  });
  const discard = () => {
    if (req.readableEnded) return;
    detach();
    try {
      controller.error(new Error("the request was answered before its body was read"));
    } catch {
      /* closed or cancelled already */
    }
    req.resume();
  };
  return { stream, discard };
}
