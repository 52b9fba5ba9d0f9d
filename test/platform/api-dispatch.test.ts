// The web server's direct route dispatch (scripts/api-dispatch.mjs) over a real HTTP server and
// keep-alive sockets, with compiled route modules of the shape `next build` writes
// (`module.exports.routeModule.userland` = the route file's exports) in a temporary build folder.
import fs from "node:fs";
import http from "node:http";
import { AsyncLocalStorage } from "node:async_hooks";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { apiRoutes } from "../../scripts/api-dispatch.mjs";

// The route declarations (as lib/api/routes.ts has them): /runs/{id}/metrics and DELETE /runs/{id}
// are declared without a compiled handler.
const DECLARED = [
  { method: "GET", path: "/runs/{id}" },
  { method: "DELETE", path: "/runs/{id}" },
  { method: "GET", path: "/runs/filters" },
  { method: "POST", path: "/upload" },
  { method: "GET", path: "/export" },
  { method: "GET", path: "/runs/{id}/metrics" },
];

// Route modules: the path parameters and body size they saw, a body limit that stops reading
// early (as lib/api/route.ts does past its limit), a streamed answer and a cookie.
const ROUTES: Record<string, string> = {
  "runs/[id]/route.js": `exports.routeModule = { userland: {
    GET: async (req, ctx) => Response.json({ route: "run", params: await ctx.params, query: req.nextUrl.searchParams.get("q"), host: req.headers.get("host") }),
  } };`,
  "runs/filters/route.js": `exports.routeModule = { userland: { GET: async () => Response.json({ route: "filters" }) } };`,
  "upload/route.js": `exports.routeModule = { userland: {
    POST: async (req) => {
      const reader = req.body.getReader();
      let size = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > 100000) {
          await reader.cancel();
          return Response.json({ error: "too large" }, { status: 413 });
        }
      }
      return Response.json({ size, type: req.headers.get("content-type") }, { status: 201, headers: { "set-cookie": "a=1" } });
    },
  } };`,
  "export/route.js": `exports.routeModule = { userland: {
    GET: async () => new Response(new ReadableStream({
      start(c) { for (let i = 0; i < 50; i++) c.enqueue(new TextEncoder().encode("line " + i + "\\n")); c.close(); },
    }), { headers: { "content-type": "text/plain" } }),
  } };`,
};

let server: http.Server;
let port: number;
const fallback: string[] = [];
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "api-dispatch-"));
  for (const [file, code] of Object.entries(ROUTES)) {
    const p = path.join(dir, "server/app/api/v1", file);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, code);
  }
  // next/server needs the async context Next's server sets up before the dispatcher is made
  (globalThis as { AsyncLocalStorage?: unknown }).AsyncLocalStorage ??= AsyncLocalStorage;
  const api = apiRoutes(DECLARED, dir);
  server = http.createServer((req, res) => {
    const pathname = req.url!.split("?")[0];
    const m = api.match(pathname);
    if (m && api.dispatch(req, res, m)) return;
    fallback.push(`${req.method} ${pathname}`);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function request(method: string, p: string, body?: Buffer) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; socket: unknown }>((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, path: p, method, agent, headers: body ? { "content-type": "application/octet-stream" } : {} },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text, socket: req.socket }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("API dispatch", () => {
  it("matches literal segments before parameters and decodes parameters as Next does", async () => {
    expect(JSON.parse((await request("GET", "/api/v1/runs/filters")).body)).toEqual({ route: "filters" });
    const r = await request("GET", "/api/v1/runs/a%20b?q=x");
    expect(JSON.parse(r.body)).toEqual({ route: "run", params: { id: "a b" }, query: "x", host: `127.0.0.1:${port}` });
    expect(r.headers["content-length"]).toBe(String(Buffer.byteLength(r.body)));
  });

  it("matches a path to one declared template, its methods and parameters, and names those without a compiled file", () => {
    const api = apiRoutes(DECLARED, dir);
    expect(api.uncompiled).toEqual(["/runs/{id}/metrics"]);
    const at = (p: string) => {
      const m = api.match(p);
      return m && { path: m.route.path, methods: [...m.route.methods].sort(), params: m.params };
    };
    expect(at("/api/v1/runs/filters")).toEqual({ path: "/runs/filters", methods: ["GET", "HEAD", "OPTIONS"], params: {} });
    expect(at("/api/v1/runs/abc")).toEqual({ path: "/runs/{id}", methods: ["DELETE", "GET", "HEAD", "OPTIONS"], params: { id: "abc" } });
    expect(at("/api/v1/runs/abc/")).toMatchObject({ path: "/runs/{id}" }); // its 405s hold with a trailing slash too
    expect(at("/api/v1/runs/abc/metrics")).toMatchObject({ path: "/runs/{id}/metrics", params: { id: "abc" } });
    for (const p of ["/api/v1/runs//metrics", "/api/v1/", "/api/v1/runs/a/b/c", "/api/v2/runs/abc", "/runs/abc"]) expect(at(p), p).toBeNull();
  });

  it("hands a Host that makes no URL to the handler as it came (whose Host check refuses it)", async () => {
    const r = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port, path: "/api/v1/runs/x", headers: { host: "a b" } }, (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve(text));
        })
        .on("error", reject);
    });
    expect(JSON.parse(r)).toMatchObject({ route: "run", host: "a b" });
  });

  it("leaves paths and methods without a compiled handler to Next", async () => {
    expect((await request("DELETE", "/api/v1/runs/x")).status).toBe(404);
    expect((await request("GET", "/api/v1/nothing")).status).toBe(404);
    expect((await request("GET", "/api/v1/runs/x/metrics")).status).toBe(404);
    expect(fallback).toEqual(["DELETE /api/v1/runs/x", "GET /api/v1/nothing", "GET /api/v1/runs/x/metrics"]);
  });

  it("hands a body over whole, its headers and cookies back", async () => {
    const r = await request("POST", "/api/v1/upload", Buffer.alloc(90_000, 7));
    expect(r.status).toBe(201);
    expect(JSON.parse(r.body)).toEqual({ size: 90_000, type: "application/octet-stream" });
    expect(r.headers["set-cookie"]).toEqual(["a=1"]);
  });

  it("answers a body the handler stops reading with Connection: close, and the next request is served", async () => {
    const big = await request("POST", "/api/v1/upload", Buffer.alloc(2_000_000, 1));
    expect(big.status).toBe(413);
    // the rest of the body was discarded, not parsed as a next request (scripts/early-answer.mjs)
    expect(big.headers.connection).toBe("close");
    const next = await request("GET", "/api/v1/runs/filters");
    expect(next.status).toBe(200);
  });

  it("streams an answer of many chunks", async () => {
    const r = await request("GET", "/api/v1/export");
    expect(r.status).toBe(200);
    expect(r.body.split("\n").filter(Boolean)).toHaveLength(50);
    expect(r.body.endsWith("line 49\n")).toBe(true);
  });
});
