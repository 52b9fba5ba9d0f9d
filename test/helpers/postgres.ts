// A PostgreSQL for tests and benchmarks. With TURNLENS_TEST_PG (a postgresql:// URL of a server
// whose user may CREATE DATABASE) that server is used; otherwise a throwaway cluster is made with
// Debian's PostgreSQL 15 (initdb + pg_ctl in a temp dir, loopback only, a free port, no service)
// and removed by stop() - or by the process's exit if stop() is never reached.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";

export const PG_BIN = process.env.TURNLENS_PG_BIN || "/usr/lib/postgresql/15/bin";
const USER = "turnlens";

export interface TempPostgres {
  /** The server's URL without a database name (postgresql://user@127.0.0.1:port). */
  serverUrl: string;
  /** Creates an empty database (one per suite) and returns its URL. */
  createDatabase(prefix: string): Promise<string>;
  /** Drops the databases made here; for a temp cluster, stops it and deletes its directory. */
  stop(): Promise<void>;
}

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function postgresUnavailable(): string | null {
  if (process.env.TURNLENS_TEST_PG) return null;
  for (const tool of ["initdb", "pg_ctl", "postgres"]) {
    if (!fs.existsSync(path.join(PG_BIN, tool))) {
      return `PostgreSQL tests skipped: ${path.join(PG_BIN, tool)} not found (install Debian's postgresql package, set TURNLENS_PG_BIN, or point TURNLENS_TEST_PG at a server)`;
    }
  }
  if (process.getuid?.() === 0 && !systemUserExists("postgres")) {
    return "PostgreSQL tests skipped: running as root and there is no postgres system user to run initdb as (initdb refuses root)";
  }
  return null;
}

function systemUserExists(name: string): boolean {
  try {
    execFileSync("id", ["-u", name], { stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
}

/** A loopback port free a moment ago (a server may still lose it to another process). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL tool; as root, as the postgres user (initdb and postgres refuse root). */
function pgTool(tool: string, args: string[]): void {
  const bin = path.join(PG_BIN, tool);
  const [cmd, argv] = process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  try {
    execFileSync(cmd, argv, { stdio: "pipe", timeout: 120_000 });
  } catch (e) {
    const err = e as { stderr?: Buffer; stdout?: Buffer; message: string };
    throw new Error(`${tool} ${args.join(" ")} failed: ${err.stderr?.toString() || err.stdout?.toString() || err.message}`);
  }
}

export async function startPostgres(): Promise<TempPostgres> {
  const given = process.env.TURNLENS_TEST_PG;
  if (given) return onServer(given.replace(/\/[^/@]*$/, ""), async () => {});
  const skip = postgresUnavailable();
  if (skip) throw new Error(skip);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-pg-"));
  const data = path.join(dir, "data");
  let running = false;
  // Sync, so it also runs from process.on("exit"): never leave a cluster behind.
  const teardown = () => {
    if (running) {
      try {
        pgTool("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        /* already gone */
      }
      running = false;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  // A signal's default action skips "exit" handlers: tear down first, then die of the signal
  // unless someone else handles it (scripts/pg-temp.ts forwards it to its command).
  const onSignal = (sig: NodeJS.Signals) => {
    teardown();
    if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  };
  const signals: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];
  const unhook = () => {
    process.off("exit", teardown);
    for (const sig of signals) process.off(sig, onSignal);
  };
  process.on("exit", teardown);
  for (const sig of signals) process.once(sig, onSignal);
  try {
    if (process.getuid?.() === 0) execFileSync("chown", ["postgres:postgres", dir]);
    pgTool("initdb", ["-D", data, "-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8", "--locale=C"]);
    // A port free a moment ago can be taken before the server binds it: try a few.
    for (let attempt = 1; ; attempt++) {
      const port = await freeLoopbackPort();
      try {
        pgTool("pg_ctl", [
          "-D",
          data,
          "-l",
          path.join(dir, "server.log"),
          "-w",
          "-t",
          "60",
          "-o",
          `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
          "start",
        ]);
        running = true;
        return onServer(`postgresql://${USER}@127.0.0.1:${port}`, async () => {
          teardown();
          unhook();
        });
      } catch (e) {
        if (attempt >= 3) throw new Error(`${(e as Error).message}\nserver log: ${fs.readFileSync(path.join(dir, "server.log"), "utf8").slice(-2000)}`);
      }
    }
  } catch (e) {
    teardown();
    unhook();
    throw e;
  }
}

function onServer(serverUrl: string, shutdown: () => Promise<void>): TempPostgres {
  const made: string[] = [];
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: `${serverUrl}/postgres` });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  return {
    serverUrl,
    async createDatabase(prefix) {
      const name = `${prefix.toLowerCase().replace(/[^a-z0-9_]/g, "_")}_${randomBytes(4).toString("hex")}`;
      await admin((c) => c.query(`CREATE DATABASE "${name}"`));
      made.push(name);
      return `${serverUrl}/${name}`;
    },
    async stop() {
      // On a given server, drop what the tests made; a temp cluster is deleted whole.
      if (process.env.TURNLENS_TEST_PG) {
        await admin(async (c) => {
          for (const name of made.splice(0)) await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        });
      }
      await shutdown();
    },
  };
}
