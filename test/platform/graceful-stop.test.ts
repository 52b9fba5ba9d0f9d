// The web server's stop (scripts/graceful-stop.mjs, used by scripts/web-server.mjs on SIGTERM) on a
// real HTTP server and real keep-alive sockets: a request in flight finishes, a client that keeps
// sending on its keep-alive connection is not served past the stop, and the stop ends within its
// grace period even when a request never does. (Node's server.close() alone waited for the busy
// client to stop by itself: during a restart, two servers wrote to one SQLite file.)
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { gracefulServer } from "../../scripts/graceful-stop.mjs";

type Stoppable = { server: http.Server; stop: () => Promise<void> };
const servers: Stoppable[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.server.closeAllConnections();
    await s.stop();
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A server whose /slow answers after 400 ms, /hang never, anything else at once; it logs what it served, when. */
async function start(graceMs: number) {
  const served: { path: string; at: number }[] = [];
  const s: Stoppable = gracefulServer(
    {},
    (req: http.IncomingMessage, res: http.ServerResponse) => {
      served.push({ path: req.url!, at: Date.now() });
      if (req.url === "/hang") return;
      setTimeout(() => res.end("ok"), req.url === "/slow" ? 400 : 0);
    },
    { graceMs },
  );
  servers.push(s);
  await new Promise<void>((r) => s.server.listen(0, "127.0.0.1", r));
  return { ...s, served, port: (s.server.address() as AddressInfo).port };
}

function get(port: number, path: string, agent: http.Agent): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, agent }, (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
      })
      .on("error", reject);
  });
}

describe("graceful stop", () => {
  it("finishes a request in flight, serves a busy keep-alive client nothing past the stop, and closes every connection", async () => {
    const srv = await start(5_000);
    // a client that sends request after request on one keep-alive connection, answers counted
    const busy = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const answers: { status: number; connection?: string }[] = [];
    let refused: Error | null = null;
    const loop = (async () => {
      const until = Date.now() + 8_000;
      while (Date.now() < until) {
        try {
          answers.push(await get(srv.port, "/fast", busy));
        } catch (e) {
          refused = e as Error; // the connection closed and no new one is accepted
          return;
        }
      }
    })();
    while (answers.length < 20) await sleep(5);
    const slow = get(srv.port, "/slow", new http.Agent({ keepAlive: true }));
    while (!srv.served.some((s) => s.path === "/slow")) await sleep(5);

    const t0 = Date.now();
    await srv.stop();
    const took = Date.now() - t0;
    await loop;
    busy.destroy();

    const inFlight = await slow;
    expect(inFlight).toMatchObject({ status: 200, body: "ok", connection: "close" }); // finished, and told the connection ends
    expect(took).toBeLessThan(2_000); // the busy client did not hold the stop (grace: 5 s)
    expect(srv.served.filter((s) => s.path === "/fast" && s.at > t0)).toEqual([]); // nothing served past the stop
    // the busy client saw its connection end: a refused reconnect, or a 503 that closes it
    expect(refused !== null || answers.some((a) => a.status === 503 && a.connection === "close")).toBe(true);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
    expect(srv.server.listening).toBe(false);
    await expect(get(srv.port, "/fast", new http.Agent())).rejects.toThrow(/ECONNREFUSED/);
  });

  it("answers a request that arrives on an open connection while stopping with 503 and Connection: close", async () => {
    const srv = await start(5_000);
    const socket = net.connect(srv.port, "127.0.0.1");
    let raw = "";
    socket.on("data", (d) => (raw += d));
    const closed = new Promise((r) => socket.on("close", r));
    socket.write("GET /first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    while (!raw.includes("ok")) await sleep(5);
    // the next request has begun (its headers are half sent) when the stop comes: not an idle connection
    socket.write("GET /late HTTP/1.1\r\nHo");
    await sleep(50);
    const stopped = srv.stop();
    socket.write("st: 127.0.0.1\r\n\r\n");
    await stopped;
    await closed; // and the server closed the connection after answering
    const late = raw.slice(raw.indexOf("ok") + 2);
    expect(late).toMatch(/^HTTP\/1\.1 503/);
    expect(late).toMatch(/connection: close/i);
    expect(late).toMatch(/retry-after: 1/i);
    expect(late).toContain("the server is stopping");
    expect(srv.served.map((s) => s.path)).toEqual(["/first"]);
  });

  it("closes a request that never ends once the grace period is over", async () => {
    const srv = await start(300);
    const hung = get(srv.port, "/hang", new http.Agent({ keepAlive: true }));
    while (!srv.served.length) await sleep(5);
    const t0 = Date.now();
    await srv.stop();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(Date.now() - t0).toBeLessThan(2_000);
    await expect(hung).rejects.toThrow(/socket hang up|ECONNRESET/);
  });
});
