// PostgreSQL: the offline migrator on both providers, the PostgreSQL Prisma client, the
// same tables as SQLite, and the synchronous libpq connection lib/db runs its SQL through. Runs on a throwaway cluster (test/helpers/postgres.ts) or
// on TURNLENS_TEST_PG; skipped with a message where PostgreSQL is not installed.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrisma } from "../../lib/db/client";
import { PgSyncDb, PLAN_PER_CALL } from "../../lib/db/pg-sync";
import { assertStoreServable } from "../../lib/db/url";
import { postgresUnavailable, startPostgres, type TempPostgres } from "../helpers/postgres";
import { ROOT } from "../helpers/temp-db";

const run = promisify(execFile);
const migrate = (url: string, cmd: string) => run(process.execPath, ["scripts/db-migrate.mjs", cmd], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url } });

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

    const db = createPrisma(url);
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
      // the word index is an FTS5 table on SQLite: its shadow tables are FTS5's own, and its rowid is PostgreSQL's "key"
      for (const t of tables.filter((t) => !t.startsWith("TrajectoryText_")))
        sqliteCols[t] = [...(lite.pragma(`table_info("${t}")`) as { name: string }[]).map((c) => c.name), ...(t === "TrajectoryText" ? ["key"] : [])].sort();
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
      for (const row of r.rows) {
        pgCols[row.table_name] ??= [];
        pgCols[row.table_name].push(row.column_name);
      }
    } finally {
      await c.end();
    }
    for (const cols of Object.values(pgCols)) cols.sort();
    expect(Object.keys(sqliteCols).length).toBeGreaterThan(5);
    expect(pgCols).toEqual(sqliteCols);
  });

  it("the app accepts a PostgreSQL URL and refuses any other kind naming what it takes", () => {
    expect(() => assertStoreServable(url)).not.toThrow();
    expect(() => assertStoreServable("mysql://x@localhost/db")).toThrow(/must be file:\.\.\. \(SQLite\) or postgresql:\/\//);
  });

  it("the synchronous connection gives values shaped as SQLite gives them, and binds ? and @name", () => {
    const db = new PgSyncDb(url);
    try {
      db.exec(`CREATE TABLE "Shapes" ("i" INTEGER, "b" BIGINT, "f" DOUBLE PRECISION, "ok" BOOLEAN, "t" TIMESTAMP(3), "j" JSONB, "blob" BYTEA, "s" TEXT)`);
      const bytes = Buffer.from([0, 1, 2, 250, 255]);
      const ins = db.prepare(`INSERT INTO "Shapes" VALUES (?,?,?,?,?,?,?,?)`);
      expect(ins.run(7, 2 ** 40, 0.25, 1, "2026-11-23T11:12:50.120+00:00", JSON.stringify({ a: [1, 2] }), bytes, "it's ? here").changes).toBe(1);
      ins.run(null, null, NaN, 0, null, null, null, null);
      const rows = db.prepare(`SELECT * FROM "Shapes" ORDER BY "i" NULLS LAST`).all() as Record<string, unknown>[];
      expect(rows[0]).toEqual({ i: 7, b: 2 ** 40, f: 0.25, ok: 1, t: "2026-11-23T11:12:50.120+00:00", j: '{"a": [1, 2]}', blob: bytes, s: "it's ? here" });
      expect(rows[1].f).toBeNaN();
      expect(rows[1].ok).toBe(0);
      // NULL and the empty text are told apart (libpq gives both as "")
      expect(rows[1]).toMatchObject({ i: null, b: null, t: null, j: null, blob: null, s: null });
      ins.run(8, null, 1, 1, null, null, Buffer.alloc(0), "");
      expect(db.prepare(`SELECT "s", "blob", "b" FROM "Shapes" WHERE "i" = 8`).raw().get()).toEqual(["", Buffer.alloc(0), null]);
      expect(db.prepare(`SELECT COUNT(*) FROM "Shapes" WHERE "s" = '?'`).pluck().get()).toBe(0); // a quoted ? is not a parameter
      expect(db.prepare(`SELECT "i", "f" FROM "Shapes" WHERE "i" = @i AND "i" < @i + 1`).raw().all({ i: 7 })).toEqual([[7, 0.25]]);
      expect(() => db.prepare(`SELECT "nope" FROM "Shapes"`).all()).toThrow(
        expect.objectContaining({ code: "42703", message: expect.stringContaining("nope") }),
      );
    } finally {
      db.close();
    }
  });

  it("transactions commit, roll back on a throw, and nest as savepoints", () => {
    const db = new PgSyncDb(url);
    try {
      db.exec(`CREATE TABLE "Tx" ("v" INTEGER PRIMARY KEY)`);
      const put = db.prepare(`INSERT INTO "Tx" VALUES (?)`);
      db.transaction(() => put.run(1)).immediate();
      expect(() =>
        db.transaction(() => {
          put.run(2);
          throw new Error("boom");
        })(),
      ).toThrow("boom");
      db.transaction(() => {
        put.run(3);
        expect(() => db.transaction(() => put.run(3))()).toThrow(expect.objectContaining({ code: "23505" })); // the savepoint rolls back alone
        put.run(4);
      }).immediate();
      expect(db.prepare(`SELECT "v" FROM "Tx" ORDER BY 1`).pluck().all()).toEqual([1, 3, 4]);
      expect(db.inTransaction).toBe(false);
    } finally {
      db.close();
    }
  });

  it("prepares a statement once per connection, except one marked to be planned per call", () => {
    const db = new PgSyncDb(url);
    try {
      const prepared = () => db.prepare(`SELECT "statement" FROM pg_prepared_statements`).pluck().all() as string[];
      for (let i = 0; i < 3; i++) expect(db.prepare(`SELECT ? + 1 AS "n"`).pluck().get(i)).toBe(i + 1);
      for (let i = 0; i < 3; i++) expect(db.prepare(`${PLAN_PER_CALL} SELECT ? + 2 AS "n"`).pluck().get(i)).toBe(i + 2);
      const texts = prepared();
      expect(texts.filter((t) => t.includes("$1 + 1"))).toHaveLength(1);
      expect(texts.filter((t) => t.includes("$1 + 2"))).toHaveLength(0);
      expect(() => db.prepare(`${PLAN_PER_CALL} SELECT "nope" FROM pg_class WHERE oid = ?`).all(1)).toThrow(expect.objectContaining({ code: "42703" }));
    } finally {
      db.close();
    }
  });
});
