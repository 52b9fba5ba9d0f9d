// The web server with TURNLENS_SERVER_PROCESSES=2 (scripts/web-server.mjs under node:cluster): two
// processes serve one port from one database, a process that dies is replaced while the other
// keeps answering, and a stop signal to the primary stops them all. Its own server on its own
// SQLite file, beside the suite's.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { alive, children, freePort, until } from "./own-server";

/** A GET on a connection of its own (keep-alive connections die with the process that held them). */
const freshGet = (url: string) =>
  new Promise<number>((resolve, reject) =>
    http
      .get(url, { agent: false }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      })
      .on("error", reject),
  );

test("two server processes share the port, a dead one is replaced, and a stop ends them all", async () => {
  test.setTimeout(180_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-procs-"));
  const env = { ...process.env, DATABASE_URL: `file:${path.join(dir, "db.sqlite")}`, TURNLENS_SERVER_PROCESSES: "2" };
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { env, stdio: "pipe" });
  const port = await freePort();
  const api = `http://127.0.0.1:${port}/api/v1`;
  let server: ChildProcess | null = spawn(process.execPath, ["scripts/web-server.mjs"], { env: { ...env, PORT: String(port) }, stdio: "ignore" });
  try {
    const primary = server.pid!;
    await until("the server", async () => (await fetch(`${api}/projects`).catch(() => null))?.ok);
    const workers = await until("two processes", () => (children(primary).length === 2 ? children(primary) : null));

    // What one process writes, the other reads: 40 requests spread over both by the primary.
    const created = await (
      await fetch(`${api}/runs/import`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "shared" }) })
    ).json();
    const reads = await Promise.all(Array.from({ length: 40 }, () => fetch(`${api}/runs/${created.id}`).then((r) => r.status)));
    expect(reads).toEqual(reads.map(() => 200));

    // A process killed outright is replaced; new connections are answered throughout.
    process.kill(workers[0], "SIGKILL");
    await until("the killed process gone", () => !alive(workers[0]) || !children(primary).includes(workers[0]));
    for (let i = 0; i < 20; i++) expect(await freshGet(`${api}/projects`)).toBe(200);
    const replaced = await until("a replacement", () => {
      const now = children(primary);
      return now.length === 2 && !now.includes(workers[0]) ? now : null;
    });
    expect(replaced).toContain(workers[1]);

    // SIGTERM to the primary stops every process and frees the port.
    const exited = new Promise<number | null>((r) => server!.on("exit", (code) => r(code)));
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
    server = null;
    for (const pid of replaced) expect(alive(pid)).toBe(false);
    await expect(freshGet(`${api}/projects`)).rejects.toThrow(/ECONNREFUSED/);
  } finally {
    server?.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
