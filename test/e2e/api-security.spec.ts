// The server as the network sees it (scripts/e2e-server.sh: the built web server and a worker):
// what Next.js alone would answer with a plain-text 500, and what a rebinding or cross-site page sends.
import http from "node:http";
import { expect, test } from "@playwright/test";

const PORT = Number(process.env.E2E_PORT ?? 3100);

/** A raw HTTP request: any method, any Host header, the path sent byte for byte. */
function raw(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: PORT, method, path, headers: { host: `127.0.0.1:${PORT}`, ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on("error", reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

test("unsupported methods are a JSON 405 with the allowed methods, not a 500", async () => {
  const trace = await raw("TRACE", "/api/v1/runs");
  expect(trace.status).toBe(405);
  expect(JSON.parse(trace.text).issues[0].path).toBe("method");
  const put = await raw("PUT", "/api/v1/runs/abc/cancel", { "content-type": "application/json" }, "{}");
  expect(put.status).toBe(405);
  expect(put.headers.allow).toBe("OPTIONS, POST");
  const onRuns = await raw("PATCH", "/api/v1/runs");
  expect(onRuns.headers.allow?.split(", ").sort()).toEqual(["GET", "HEAD", "OPTIONS", "POST"]);
});

test("the longest documented query reaches its route, and one past the header limit is a JSON 431", async () => {
  // a search by a 10,000-character anchor of 3-byte characters: 90 KB percent-encoded
  const anchor = "€".repeat(10_000);
  const longest = await raw("GET", `/api/v1/search/trajectories?anchor=${encodeURIComponent(anchor)}`);
  expect(longest.status, longest.text).toBe(200);
  // a longer one still reaches its 400 naming the parameter
  const tooLong = await raw("GET", `/api/v1/search/trajectories?anchor=${encodeURIComponent(anchor.repeat(2))}`);
  expect(tooLong.status).toBe(400);
  expect(JSON.parse(tooLong.text).issues[0].path).toBe("query.anchor");
  const beyond = await raw("GET", `/api/v1/search/trajectories?anchor=${"a".repeat(300 * 1024)}`);
  expect(beyond.status).toBe(431);
  expect(beyond.headers["content-type"]).toBe("application/json");
  expect(JSON.parse(beyond.text).issues[0].path).toBe("headers");
});

test("malformed percent-encoding in a path is a JSON 400", async () => {
  for (const path of ["/api/v1/runs/%ff", "/api/v1/runs/%ff/steps", "/api/v1/jobs/%e0%a4/log"]) {
    const r = await raw("GET", path);
    expect(r.status, path).toBe(400);
    expect(JSON.parse(r.text).error).toMatch(/percent-encoding/);
  }
});

test("a foreign Host header gets nothing: no page, no API answer", async () => {
  for (const host of ["evil.example", `127.0.0.1.nip.io:${PORT}`]) {
    expect((await raw("GET", "/runs", { host })).status, host).toBe(403);
    const api = await raw("GET", "/api/v1/runs", { host });
    expect(api.status, host).toBe(403);
    expect(api.text).not.toContain('"runs"');
  }
  expect((await raw("GET", "/runs", { host: `localhost:${PORT}` })).status).toBe(200);
});

test("a cross-site page cannot launch: text/plain and foreign Origin are refused, nothing is created", async ({ request }) => {
  const before = (await (await request.get("/api/v1/runs")).json()).total;
  const body = JSON.stringify({ jobKind: "baseline", config: { envId: "frozenlake", episodes: 8 } });
  const plain = await raw("POST", "/api/v1/runs", { "content-type": "text/plain" }, body);
  expect(plain.status).toBe(415);
  const foreign = await raw("POST", "/api/v1/runs", { "content-type": "application/json", origin: "https://evil.example" }, body);
  expect(foreign.status).toBe(403);
  expect((await (await request.get("/api/v1/runs")).json()).total).toBe(before);
});

test("the OpenAPI document's references all resolve", async ({ request }) => {
  const doc = await (await request.get("/api/v1/openapi.json")).json();
  expect(doc.openapi).toBe("3.1.0");
  const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
  expect(refs.length).toBeGreaterThan(20);
  for (const r of refs) expect(doc.components.schemas, r).toHaveProperty(r);
});
