// A fresh, migrated database per test file, on the store the run is for: a SQLite file by default,
// a PostgreSQL database when TURNLENS_TEST_STORE=postgresql (scripts/test.sh runs the database and
// queue suites a second time that way, on a temporary cluster whose URL is in TURNLENS_TEST_PG).
// DATABASE_URL is read lazily by getRawDb, so call this before the first query (and before
// importing modules that query at load time).
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PgSyncDb } from "../../lib/db/pg-sync";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The store this test run is for. */
export const TEST_STORE: "sqlite" | "postgresql" = process.env.TURNLENS_TEST_STORE === "postgresql" ? "postgresql" : "sqlite";

function migrate(url: string): void {
  execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url }, stdio: "pipe" });
}

/** The PostgreSQL server of this run (TURNLENS_TEST_PG, any database path stripped). */
function pgServer(): string {
  const given = process.env.TURNLENS_TEST_PG;
  if (!given) throw new Error("TURNLENS_TEST_STORE=postgresql needs TURNLENS_TEST_PG (scripts/pg-temp.ts sets it)");
  return given.replace(/\/[^/@]*$/, "");
}

/**
 * A new database cloned from a migrated template (CREATE DATABASE ... TEMPLATE takes ~0.1 s; the
 * migrator ~3 s). The template's name carries a hash of the migrations, so a changed history makes a new one.
 */
function createPgDatabase(name: string): { url: string; drop: () => void } {
  const server = pgServer();
  const dir = path.join(ROOT, "prisma/migrations-postgresql");
  const hash = createHash("sha1").update(fs.readdirSync(dir).sort().join("\n")).digest("hex").slice(0, 10);
  const template = `turnlens_template_${hash}`;
  const admin = new PgSyncDb(`${server}/postgres`);
  try {
    const exists = admin.prepare(`SELECT 1 FROM pg_database WHERE datname = ?`).get(template);
    if (!exists) {
      const building = `${template}_building_${process.pid}`;
      admin.exec(`CREATE DATABASE "${building}"`);
      migrate(`${server}/${building}`);
      admin.exec(`ALTER DATABASE "${building}" RENAME TO "${template}"`);
    }
    const db = `t_${name
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, "_")
      .slice(0, 30)}_${process.pid}_${Date.now().toString(36)}`;
    admin.exec(`CREATE DATABASE "${db}" TEMPLATE "${template}"`);
    return {
      url: `${server}/${db}`,
      drop: () => {
        const a = new PgSyncDb(`${server}/postgres`);
        try {
          a.exec(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
        } finally {
          a.close();
        }
      },
    };
  } finally {
    admin.close();
  }
}

/**
 * Creates and migrates a fresh database and points this process at it (DATABASE_URL is read
 * lazily by getRawDb, so call this before any query). `dir` is a scratch directory either way.
 */
export function useTempDatabase(name: string): { url: string; dir: string; cleanup: () => Promise<void> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `turnlens-${name}-`));
  let url: string;
  let drop = () => {};
  if (TEST_STORE === "postgresql") {
    ({ url, drop } = createPgDatabase(name));
  } else {
    url = `file:${path.join(dir, "test.db")}`;
    migrate(url);
  }
  process.env.DATABASE_URL = url;
  return {
    url,
    dir,
    cleanup: async () => {
      const { getRawDb } = await import("../../lib/db/raw");
      getRawDb().close();
      drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
