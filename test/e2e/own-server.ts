// Helpers of the end-to-end tests that start a server of their own (its own port, its own SQLite
// file) beside the suite's: server-processes.spec.ts, http-front.spec.ts.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** The pids of a process's children (procfs: the ppid is the 4th field of /proc/PID/stat). */
export function children(pid: number): number[] {
  return fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(fs.readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1].split(" ")[1]) === pid;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

export const alive = (pid: number) => fs.existsSync(`/proc/${pid}`);

export async function until<T>(what: string, fn: () => T | Promise<T>, ms = 60_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface OwnServer {
  port: number;
  /** http://127.0.0.1:PORT/api/v1 */
  api: string;
  proc: ChildProcess;
  /** what the server printed so far (stdout and stderr) */
  log(): string;
  /** SIGTERM, then its exit code (null when a signal ended it) */
  stop(): Promise<number | null>;
}

/**
 * `command` (default: the built web server, scripts/web-server.mjs) on a fresh migrated SQLite file
 * and a free port, with `env` added; resolves once GET /api/v1/projects answers.
 */
export async function startServer(env: Record<string, string> = {}, command = [process.execPath, "scripts/web-server.mjs"]): Promise<OwnServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-own-"));
  const full = { ...process.env, DATABASE_URL: `file:${path.join(dir, "db.sqlite")}`, ...env };
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { env: full, stdio: "pipe" });
  const port = await freePort();
  // its own process group: a test runner that exits midway (a timeout) kills it with its children
  const proc = spawn(command[0], command.slice(1), { env: { ...full, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const orphan = () => {
    try {
      process.kill(-proc.pid!, "SIGKILL");
    } catch {
      /* gone already */
    }
  };
  process.once("exit", orphan);
  let log = "";
  proc.stdout!.on("data", (c) => (log += c));
  proc.stderr!.on("data", (c) => (log += c));
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  const api = `http://127.0.0.1:${port}/api/v1`;
  const auth = env.TURNLENS_READ_TOKEN ? { authorization: `Bearer ${env.TURNLENS_READ_TOKEN}` } : undefined;
  await until("the server", async () => {
    if (proc.exitCode !== null) throw new Error(`the server exited (${proc.exitCode}): ${log}`);
    return (await fetch(`${api}/projects`, { headers: auth }).catch(() => null))?.ok;
  });
  return {
    port,
    api,
    proc,
    log: () => log,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      // a stop takes at most TURNLENS_STOP_GRACE_MS (10 s); past that the server is killed
      const kill = setTimeout(orphan, 20_000);
      const code = await exited;
      clearTimeout(kill);
      process.off("exit", orphan);
      fs.rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}
