// The HTTP API on a loopback port without `next build`: a plain node:http server that hands each
// /api/v1 request to its route file under app/api/v1 (found by path, `[param]` folders for the
// dynamic segments), imported in this process as Next.js would call it. For tests in which
// a real client process (the Python client of a launched trainer) talks HTTP to the real handlers.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { NextRequest } from "next/server";
import { ROOT } from "./temp-db";

type Handler = (req: NextRequest, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;

/** app/api/v1/<segments>/route.ts for a request path, with the values of its [param] folders. */
function routeFile(segments: string[]): { file: string; params: Record<string, string> } | null {
  let dir = path.join(ROOT, "app/api/v1");
  const params: Record<string, string> = {};
  for (const seg of segments) {
    if (fs.existsSync(path.join(dir, seg))) {
      dir = path.join(dir, seg);
      continue;
    }
    const dyn = fs.readdirSync(dir).find((d) => /^\[\w+\]$/.test(d));
    if (!dyn) return null;
    params[dyn.slice(1, -1)] = decodeURIComponent(seg);
    dir = path.join(dir, dyn);
  }
  const file = path.join(dir, "route.ts");
  return fs.existsSync(file) ? { file, params } : null;
}

export async function startApiServer(): Promise<{ url: string; close: () => Promise<void>; requests: string[] }> {
  const requests: string[] = [];
  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url!, `http://${req.headers.host}`);
      const m = url.pathname.startsWith("/api/v1/") ? routeFile(url.pathname.slice("/api/v1/".length).split("/").filter(Boolean)) : null;
      const handler = m ? ((await import(m.file)) as Record<string, Handler>)[req.method!] : undefined;
      requests.push(`${req.method} ${url.pathname}`);
      if (!m || !handler) return void res.writeHead(404).end();
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      const r = await handler(new NextRequest(url, { method: req.method, headers, body }), { params: Promise.resolve(m.params) });
      res.writeHead(r.status, Object.fromEntries(r.headers.entries()));
      res.end(Buffer.from(await r.arrayBuffer()));
    } catch (e) {
      res.writeHead(500).end(String((e as Error).stack));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
