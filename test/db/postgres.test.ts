// PostgreSQL groundwork (issue 12): the offline migrator on both providers, the PostgreSQL Prisma
// client, and the same tables as SQLite. Runs on a throwaway cluster (test/helpers/postgres.ts) or
// on TURNLENS_TEST_PG; skipped with a message where PostgreSQL is not installed.
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPrisma } from "../../lib/db/client";
import { assertStoreServable } from "../../lib/db/url";
import { postgresUnavailable, startPostgres, type TempPostgres } from "../helpers/postgres";
import { ROOT } from "../helpers/temp-db";

const run = promisify(execFile);
const migrate = (url: string, cmd: string) =>
  run(process.execPath, ["scripts/db-migrate.mjs", cmd], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url } });

const skip = postgresUnavailable();
if (skip) console.warn(skip);

describe("SQLite migration history", () => {
  it("is in step with prisma/schema.prisma", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-check-"));
    try {
      const { stdout } = await migrate(`file:${path.join(dir, "t.db")}`, "check");
      expect(stdout).toContain("sqlite: migrations in step");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(skip)("PostgreSQL", () => {
  let server: TempPostgres;
  let url: string;
  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase("pg_groundwork");
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  }, 60_000);

  it("its migration history is in step with prisma/schema.prisma (the derived PostgreSQL schema)", async () => {
    const { stdout } = await migrate(url, "check");
    expect(stdout).toContain("postgresql: migrations in step");
  });

  it("migrates with the offline migrator, and the Prisma client writes and reads a project and a run", async () => {
    const { stdout } = await migrate(url, "deploy");
    expect(stdout).toMatch(/applied: \[\s*'\d+_init'/);
    expect((await migrate(url, "deploy")).stdout).toContain("applied: []");

    const db = await openPrisma(url);
    try {
      const project = await db.project.create({ data: { name: "pg-project", description: "on PostgreSQL" } });
      const made = await db.run.create({
        data: { projectId: project.id, name: "pg-run", kind: "train", config: { lr: 0.001, env: "gridworld" }, tags: ["a", "b"] },
      });
      const got = await db.run.findUniqueOrThrow({ where: { id: made.id }, include: { project: true } });
      expect(got.project.name).toBe("pg-project");
      expect(got.config).toEqual({ lr: 0.001, env: "gridworld" });
      expect(got.tags).toEqual(["a", "b"]);
      expect(got.status).toBe("queued");
      expect(got.createdAt).toBeInstanceOf(Date);
      // The rows are in PostgreSQL itself, not in some SQLite file.
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query(`SELECT "name", "config"->>'env' AS env FROM "Run" WHERE "id" = $1`, [made.id]);
        expect(r.rows).toEqual([{ name: "pg-run", env: "gridworld" }]);
      } finally {
        await c.end();
      }
    } finally {
      await db.$disconnect();
    }
  });

  it("has the same tables and columns as SQLite", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-cols-"));
    const sqliteCols: Record<string, string[]> = {};
    try {
      const file = path.join(dir, "t.db");
      await migrate(`file:${file}`, "deploy");
      const lite = new Database(file, { readonly: true });
      const tables = lite
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_prisma_migrations'`)
        .pluck()
        .all() as string[];
      for (const t of tables) sqliteCols[t] = (lite.pragma(`table_info("${t}")`) as { name: string }[]).map((c) => c.name).sort();
      lite.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const pgCols: Record<string, string[]> = {};
    try {
      const r = await c.query(
        `SELECT table_name, column_name FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name <> '_prisma_migrations' ORDER BY table_name, column_name`,
      );
      for (const row of r.rows) (pgCols[row.table_name] ??= []).push(row.column_name);
    } finally {
      await c.end();
    }
    for (const cols of Object.values(pgCols)) cols.sort();
    expect(Object.keys(sqliteCols).length).toBeGreaterThan(5);
    expect(pgCols).toEqual(sqliteCols);
  });

  it("the app refuses a PostgreSQL URL with one message saying what is missing: neither the worker nor the web server starts", async () => {
    expect(() => assertStoreServable(url)).toThrow(/raw-SQL fast paths .* SQLite-only/);
    const start = (args: string[]) => {
      try {
        execFileSync(process.execPath, args, { cwd: ROOT, env: { ...process.env, DATABASE_URL: url, PORT: "1" }, stdio: "pipe", timeout: 60_000 });
        return { code: 0, stderr: "" };
      } catch (e) {
        return { code: (e as { status?: number }).status, stderr: String((e as { stderr?: Buffer }).stderr) };
      }
    };
    const worker = start(["--import", "tsx", "workers/worker.ts"]);
    expect(worker.code).toBe(2);
    expect(worker.stderr).toContain("TurnLens cannot serve yet");
    // The web server refuses before Next loads (PORT 1 could not be bound anyway: it must not get that far).
    const web = start(["scripts/web-server.mjs"]);
    expect(web.code).toBe(1);
    expect(web.stderr).toContain("web-server: DATABASE_URL is a PostgreSQL URL, which TurnLens cannot serve yet");
  });
});
