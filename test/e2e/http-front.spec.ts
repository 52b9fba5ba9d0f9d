// The built web server's front as clients on a socket meet it (scripts/web-server.mjs,
// scripts/api-dispatch.mjs, scripts/early-answer.mjs, scripts/serve.sh), each on a server of its
// own: answers sent before a body is read reach clients that write their whole body first (Python's
// http.client, as requests and the TurnLens client), writers without a run's write key never hold
// its ingest slots, a body that trickles past TURNLENS_BODY_TIMEOUT_MS is a 408, a Host with
// user-info is a 403 like any foreign Host, and serve.sh's exit status says how it stopped.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { expect, test } from "@playwright/test";
import { alive, children, type OwnServer, startServer, until } from "./own-server";

const MB = 1024 * 1024;
const TOKEN = randomBytes(24).toString("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Answer = { status?: number; connection?: string | null; body?: string; error?: string; seconds: number };

/** Requests sent at once by test/e2e/write-first.py: each writes its whole body, then reads the answer. */
function writeFirst(port: number, requests: { path: string; headers: Record<string, string>; size: number }[], timeout = 25): Answer[] {
  const spec = { port, timeout, requests: requests.map((r) => ({ method: "POST", ...r })) };
  const p = spawnSync("python3", ["test/e2e/write-first.py", JSON.stringify(spec)], { encoding: "utf8", timeout: (timeout + 20) * 1000 });
  if (p.status !== 0) throw new Error(`write-first.py: ${p.stderr}`);
  return JSON.parse(p.stdout);
}

/**
 * A POST announcing `length` bytes whose body comes one byte every `everyMs` on a raw socket, as a
 * slow or hostile client sends it; what the server answers is collected.
 */
function trickle(port: number, path: string, headers: Record<string, string>, length = MB, everyMs = 500) {
  const socket = net.connect(port, "127.0.0.1");
  let received = "";
  let closed = false;
  const head = Object.entries({ host: `127.0.0.1:${port}`, "content-type": "application/json", "content-length": String(length), ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n{`);
  const timer = setInterval(() => socket.writable && socket.write(" "), everyMs);
  socket.on("data", (c) => (received += c));
  socket.on("error", () => {});
  socket.on("close", () => {
    closed = true;
    clearInterval(timer);
  });
  return {
    received: () => received,
    closed: () => closed,
    stop: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

/** A raw request with any Host header. */
function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const step = (s: number) => ({ step: s, groups: [{ uid: "g0", envId: "e", trajectories: [{ turns: [{ observation: "o", action: "a", reward: 1 }] }] }] });

test.describe("a server with an API token", () => {
  let srv: OwnServer;
  let run: { id: string; writeKey: string };
  const bearer = { authorization: `Bearer ${TOKEN}` };
  const json = { "content-type": "application/json" };
  const postStep = async (s: number, headers: Record<string, string>) =>
    (await fetch(`${srv.api}/runs/${run.id}/steps`, { method: "POST", headers: { ...json, ...headers }, body: JSON.stringify(step(s)) })).status;

  test.beforeAll(async () => {
    test.setTimeout(120_000);
    srv = await startServer({ TURNLENS_API_TOKEN: TOKEN });
    const r = await fetch(`${srv.api}/runs/import`, { method: "POST", headers: { ...json, ...bearer }, body: JSON.stringify({ name: "front" }) });
    expect(r.status).toBe(201);
    run = await r.json();
  });
  test.afterAll(async () => {
    // a client gone mid-body is its own business, not a server error
    expect(srv.log()).not.toMatch(/unexpected error|\n\s+at /);
    expect(await srv.stop()).toBe(0);
  });

  test("answers sent before the body is read reach a client that writes its whole body first", async () => {
    test.setTimeout(120_000);
    const path = `/api/v1/runs/${run.id}/steps`;
    const key = { "x-turnlens-write-key": run.writeKey };
    const early = writeFirst(srv.port, [
      { path, headers: json, size: 20 * MB }, // no API token
      { path, headers: { ...json, ...bearer }, size: 20 * MB }, // no write key
      { path, headers: { ...json, ...bearer, ...key }, size: 80 * MB }, // over the 64 MB ingest limit
    ]);
    const expected = [
      [401, "headers.authorization"],
      [403, "headers.x-turnlens-write-key"],
      [413, "body"],
    ];
    early.forEach((a, i) => {
      expect(a.error, `request ${i}`).toBeUndefined();
      expect(a.status, `request ${i}`).toBe(expected[i][0]);
      expect(JSON.parse(a.body!).issues[0].path).toBe(expected[i][1]);
      expect(a.seconds).toBeLessThan(25);
    });
    // the 401 and 413 come before the body is read: the connection is not kept for another request
    expect(early[0].connection).toBe("close");
    expect(early[2].connection).toBe("close");

    // 429: every ingest slot (TURNLENS_INGEST_QUEUE, 16) held by the owner's slow bodies
    const holders = Array.from({ length: 16 }, () => trickle(srv.port, path, { ...bearer, ...key }));
    try {
      await sleep(1_000); // their requests started: they hold every slot
      expect(await postStep(1, { ...bearer, ...key })).toBe(429);
      const busy = writeFirst(
        srv.port,
        Array.from({ length: 8 }, () => ({ path, headers: { ...json, ...bearer, ...key }, size: 20 * MB })),
      );
      for (const a of busy) {
        expect(a.error).toBeUndefined();
        expect(a.status).toBe(429);
        expect(a.connection).toBe("close");
        expect(a.seconds).toBeLessThan(25);
      }
    } finally {
      for (const h of holders) h.stop();
    }
    // the holders' slots are free again once they are gone
    await until("the slots free", async () => (await postStep(2, { ...bearer, ...key })) === 201, 15_000);
  });

  test("writers without the write key never hold the ingest slots, however slowly they send", async () => {
    test.setTimeout(60_000);
    const path = `/api/v1/runs/${run.id}/steps`;
    // 16 connections (TURNLENS_INGEST_QUEUE) announcing 1 MB without the run's write key, a byte at a time
    const keyless = Array.from({ length: 16 }, () => trickle(srv.port, path, bearer));
    try {
      await sleep(1_000);
      const statuses: number[] = [];
      for (let s = 10; s < 30; s++) {
        statuses.push(await postStep(s, { ...bearer, "x-turnlens-write-key": run.writeKey }));
        await sleep(200);
      }
      expect(statuses.filter((s) => s === 201).length, statuses.join(" ")).toBeGreaterThanOrEqual(18);
      // each was refused from its headers while its body was still coming
      for (const k of keyless) expect(k.received()).toMatch(/^HTTP\/1\.1 403 /);
    } finally {
      for (const k of keyless) k.stop();
    }
  });

  test("a Host with user-info is refused like any foreign Host: 403 naming the header, no server error", async () => {
    const logged = srv.log().length;
    for (const host of ["127.0.0.1@evil.example", "user:pw@127.0.0.1", `u@127.0.0.1:${srv.port}`, "evil.example"]) {
      for (const [method, path, body] of [
        ["GET", "/api/v1/projects", undefined],
        ["POST", "/api/v1/runs/import", JSON.stringify({ name: "x" })],
      ] as const) {
        const r = await rawRequest(srv.port, method, path, { host, ...json, ...bearer }, body);
        expect(r.status, `${method} ${path} Host: ${host}`).toBe(403);
        expect(JSON.parse(r.text).issues[0].path).toBe("headers.host");
      }
      expect((await rawRequest(srv.port, "GET", "/runs", { host })).status).toBe(403);
    }
    expect(srv.log().slice(logged)).not.toMatch(/api-dispatch:|unexpected error|\n\s+at /);
  });
});

test("a body slower than TURNLENS_BODY_TIMEOUT_MS is refused 408, its slot freed and its connection closed", async () => {
  test.setTimeout(90_000);
  const srv = await startServer({ TURNLENS_BODY_TIMEOUT_MS: "2000", TURNLENS_INGEST_QUEUE: "1" });
  const tricklers: ReturnType<typeof trickle>[] = [];
  try {
    const json = { "content-type": "application/json" };
    const run = await (await fetch(`${srv.api}/runs/import`, { method: "POST", headers: json, body: JSON.stringify({ name: "slow" }) })).json();
    const key = { "x-turnlens-write-key": run.writeKey };
    const post = async (s: number) =>
      (await fetch(`${srv.api}/runs/${run.id}/steps`, { method: "POST", headers: { ...json, ...key }, body: JSON.stringify(step(s)) })).status;
    const slow = trickle(srv.port, `/api/v1/runs/${run.id}/steps`, key, MB, 200);
    tricklers.push(slow);
    const started = Date.now();
    await sleep(1_000); // its request started (its headers are in): it holds the one slot
    expect(await post(0)).toBe(429);
    await until("the 408", () => slow.received().startsWith("HTTP/1.1 408 "), 15_000);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThan(1_500);
    expect(waited).toBeLessThan(12_000);
    expect(slow.received()).toMatch(/connection: close/i);
    expect(JSON.parse(slow.received().split("\r\n\r\n")[1]).issues[0].path).toBe("body");
    await until("its connection closed", () => slow.closed(), 10_000);
    expect(await post(1)).toBe(201);
  } finally {
    for (const t of tricklers) t.stop();
    expect(await srv.stop()).toBe(0);
  }
});

test("scripts/serve.sh exits 0 on a stop signal, and non-zero when the web server dies on its own", async () => {
  test.setTimeout(180_000);
  const serve = ["bash", "scripts/serve.sh"];
  const clean = await startServer({}, serve);
  const kids = children(clean.proc.pid!);
  expect(kids.length).toBe(2);
  expect(await clean.stop()).toBe(0);
  for (const pid of kids) expect(alive(pid)).toBe(false);

  const crashed = await startServer({}, serve);
  const web = children(crashed.proc.pid!).find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("web-server.mjs"));
  const worker = children(crashed.proc.pid!).find((pid) => pid !== web);
  process.kill(web!, "SIGKILL");
  const ended = await until("serve.sh to exit", () => (crashed.proc.exitCode !== null || crashed.proc.signalCode ? crashed.proc : null), 30_000);
  expect(ended.signalCode).toBeNull();
  expect(ended.exitCode).not.toBe(0);
  expect(alive(worker!)).toBe(false);
  await crashed.stop();
});
