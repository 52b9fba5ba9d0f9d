// What the store benchmarks share (scripts/bench-load.ts, scripts/gen-scale-data.ts): a fresh
// database of either store, migrated, and the production server started on it.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freeLoopbackPort, startPostgres } from "../test/helpers/postgres";
import type { Cell } from "../lib/db/bulk-load";
import { rolloutRows } from "../lib/db/rollouts";
import { rolloutStepInputSchema } from "../lib/schemas/rollouts";

export type StoreKind = "sqlite" | "postgresql";

export interface Store {
  kind: StoreKind;
  /** DATABASE_URL of the fresh, migrated database. */
  url: string;
  /** The SQLite file, for its size (null on PostgreSQL). */
  file: string | null;
  /** Deletes the database (a temp PostgreSQL cluster is stopped and removed). */
  stop(): Promise<void>;
}

export function parseStore(v: string | undefined): StoreKind {
  if (v === "sqlite" || v === "postgresql") return v;
  throw new Error(`--store must be sqlite or postgresql (got ${JSON.stringify(v)})`);
}

/** Reads `--name value` options; unknown names are an error naming them. */
export function parseArgs(argv: string[], known: Record<string, string>): Record<string, string> {
  const out = { ...known };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !(m[1] in known))
      throw new Error(
        `unknown argument ${argv[i]}; options: ${Object.keys(known)
          .map((k) => `--${k}`)
          .join(" ")}`,
      );
    out[m[1]] = m[2] ?? argv[++i];
    if (out[m[1]] === undefined) throw new Error(`--${m[1]} needs a value`);
  }
  return out;
}

/**
 * A fresh database of the given store, migrated with the offline migrator. SQLite: a file in a
 * temp dir (or `dir`). PostgreSQL: a database on TURNLENS_TEST_PG, else a temp cluster of Debian's
 * PostgreSQL 15 (test/helpers/postgres.ts).
 */
export async function openStore(kind: StoreKind, dir?: string): Promise<Store> {
  let store: Store;
  if (kind === "sqlite") {
    const d = dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-bench-"));
    fs.mkdirSync(d, { recursive: true });
    const file = path.join(d, "bench.db");
    for (const f of [file, file + "-wal", file + "-shm"]) fs.rmSync(f, { force: true });
    store = { kind, url: `file:${file}`, file, stop: async () => fs.rmSync(d, { recursive: true, force: true }) };
  } else {
    const pg = await startPostgres();
    store = { kind, url: await pg.createDatabase("turnlens_bench"), file: null, stop: () => pg.stop() };
  }
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: { ...process.env, DATABASE_URL: store.url } });
  return store;
}

export interface Server {
  /** http://127.0.0.1:PORT/api/v1 */
  api: string;
  /** the server's process id (its ingest processes are its children) */
  pid: number;
  stop(): Promise<void>;
}

/**
 * The production server (scripts/web-server.mjs, as scripts/serve.sh runs it; no worker: the
 * benchmarks write imported runs) on `databaseUrl`, built first if this checkout has no build.
 * No API or read token: the loopback default. Its output goes to `logFile`.
 */
export async function startServer(databaseUrl: string, logFile: string, extraEnv: Record<string, string> = {}): Promise<Server> {
  if (!fs.existsSync(".next/BUILD_ID")) {
    console.error("bench: no production build here; running next build (a few minutes)…");
    execFileSync("node_modules/.bin/next", ["build"], { stdio: "inherit", env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });
  }
  const port = await freeLoopbackPort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...extraEnv,
    DATABASE_URL: databaseUrl,
    TURNLENS_HOST: "127.0.0.1",
    PORT: String(port),
    NEXT_TELEMETRY_DISABLED: "1",
  };
  delete env.TURNLENS_API_TOKEN;
  delete env.TURNLENS_READ_TOKEN;
  const log = fs.openSync(logFile, "w");
  const child = spawn(process.execPath, ["scripts/web-server.mjs"], { env, stdio: ["ignore", log, log], detached: true });
  let exited = false;
  child.on("exit", () => (exited = true));
  const kill = () => {
    if (!exited) {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        /* gone */
      }
    }
  };
  process.on("exit", kill);
  const api = `http://127.0.0.1:${port}/api/v1`;
  for (let i = 0; ; i++) {
    if (exited) throw new Error(`the server exited at start; its log (${logFile}):\n${fs.readFileSync(logFile, "utf8").slice(-2000)}`);
    try {
      if ((await fetch(`${api}/projects`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (i > 600) throw new Error(`the server did not answer in 120 s (log: ${logFile})`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    api,
    pid: child.pid!,
    stop: async () => {
      kill();
      await new Promise<void>((r) => (exited ? r() : child.on("exit", () => r())));
      process.off("exit", kill);
    },
  };
}

/** `uptime`'s three load averages, for the record beside each figure. */
export const loadAverage = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

export const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** zstd -3's size of `buf`: the yardstick a compact store is held to (null without the zstd command: apt-get install zstd). */
export function zstd3(buf: Buffer): number | null {
  try {
    return execFileSync("zstd", ["-3", "-c", "-q"], { input: buf, maxBuffer: 1 << 30 }).length;
  } catch {
    return null;
  }
}

/** A SQLite database's bytes in use as a reader sees them (lib/db/bulk-load.ts). */
export { sqliteBytesInUse } from "../lib/db/bulk-load";

/** JSON over fetch; a non-2xx answer throws with its body. */
export async function call<T = unknown>(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<T> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${url}: HTTP ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

// ---- the step both benchmarks write: 16 groups x 8 trajectories x 8 turns of a 6x6 grid game
export const STEP_GROUPS = 16;
export const STEP_TRAJECTORIES = 8;
export const STEP_TURNS = 8;
export const TURNS_PER_STEP = STEP_GROUPS * STEP_TRAJECTORIES * STEP_TURNS;

/** POST /runs/{id}/steps's body as a trainer sends it: text observations, anchors, advantages, token counts. */
export function stepBody(step: number, batchId?: string) {
  const grid = "######\n#_P__#\n#_X__#\n#__O_#\n#____#\n######";
  return {
    step,
    ...(batchId ? { batchId } : {}),
    estimator: "gigpo",
    groups: Array.from({ length: STEP_GROUPS }, (_, g) => ({
      uid: `task-${g}`,
      envId: "sokoban",
      taskSeed: g,
      trajectories: Array.from({ length: STEP_TRAJECTORIES }, (_, t) => ({
        success: t % 3 === 0,
        turns: Array.from({ length: STEP_TURNS }, (_, i) => ({
          observation: `Turn ${i}. You are P; push the box X onto the target O.\n${grid}`,
          action: ["up", "down", "left", "right"][(g + t + i) % 4],
          reward: i === STEP_TURNS - 1 && t % 3 === 0 ? 10 : -0.1,
          done: i === STEP_TURNS - 1,
          anchor: `s${(g * 7 + i) % 40}`,
          advantage: ((t % 3) - 1) * 0.5,
          tokenCount: 12 + ((g + i) % 20),
        })),
      })),
    })),
  };
}
export type StepBody = ReturnType<typeof stepBody>;

export type { Cell };
export { STEP_COLS, GROUP_COLS, TRAJECTORY_COLS } from "../lib/db/rollouts";

/**
 * The rows lib/db/rollouts.ts writeRolloutStep stores for `body` (gen:scale bulk-loads them;
 * test/platform/scale-rows.test.ts holds them equal to what the store gives back): RolloutStep,
 * RolloutGroup and Trajectory rows (turns packed into their trajectory), new UUIDv7 ids from
 * `newId`, turn seq from `seq0`. The same builder writeRolloutStep uses (rolloutRows).
 */
export function stepRows(runId: string, body: StepBody, seq0: number, createdAt: string, newId: () => string) {
  const rows = rolloutRows(runId, rolloutStepInputSchema.parse(body), seq0, createdAt, newId);
  return { steps: rows.steps as Cell[][], groups: rows.groups as Cell[][], trajectories: rows.trajectories as Cell[][] };
}
