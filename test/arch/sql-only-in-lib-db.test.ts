// SQL lives in lib/db (ARCHITECTURE.md: lib/db is the store layer): every statement the app, its
// workers, scripts and tests run is a function there, and where the stores spell a statement
// differently both spellings sit side by side (lib/db/dialect.ts). This
// scans the repository's TypeScript and JavaScript outside lib/db, prisma/migrations and
// lib/generated for SQL statements and fails on each one, naming file and line, unless EXCEPTIONS
// allows it with a reason. An exception that no longer matches anything fails too, so the list
// only shrinks.
import fs from "node:fs";
import path from "node:path";
import { useScratchTrees } from "../helpers/scratch-tree";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Folders the rule does not apply to: the store layer itself, SQL migrations, generated code. */
const SQL_HOMES = ["lib/db/", "prisma/migrations/", "prisma/migrations-postgresql/", "lib/generated/"];
/** Not source: dependencies, build output, data, version control. */
const SKIP_DIRS = new Set(["node_modules", ".next", ".git", "dist", "data", "coverage", "test-results", "playwright-report"]);
const EXTENSIONS = [".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs"];

/** SQL statements as our code writes them (keywords upper case), and the raw-SQL entry points of the drivers. */
const SQL = [
  /\bSELECT\s+(?:DISTINCT\s+)?(?:\*|"|\d|[\w.]+\s*(?:\(|,|FROM\b|AS\b)|\w+\.")/,
  /\bINSERT\s+(?:OR\s+\w+\s+)?INTO\b/,
  /\bUPDATE\s+"?\w+"?\s+SET\b/,
  /\bDELETE\s+FROM\b/,
  /\b(?:CREATE|DROP|ALTER)\s+(?:UNIQUE\s+|VIRTUAL\s+|TEMP(?:ORARY)?\s+)?(?:TABLE|INDEX|VIEW|TRIGGER|DATABASE|SCHEMA|SEQUENCE|EXTENSION)\b/,
  /\bPRAGMA\s+\w/,
  /\bVACUUM\b/,
  /\bEXPLAIN\s+(?:QUERY\s+PLAN|ANALYZE|SELECT)\b/,
  /\bCOPY\s+"?\w+"?\s*(?:\(|FROM\b|TO\b)/,
  /\bWITH\s+RECURSIVE\b/,
  /\bTRUNCATE\s+(?:TABLE\s+)?"/,
  /\.pragma\(/, // better-sqlite3: runs PRAGMA statements
  /\$(?:queryRaw|executeRaw)(?:Unsafe)?\b/, // Prisma: raw SQL
  /\.query\(\s*["'`](?:BEGIN|COMMIT|ROLLBACK)\b/, // pg: transaction control
];

interface Exception {
  /** A file (exact path) or the files a pattern matches. */
  path: string | RegExp;
  /** When set, only lines matching it are allowed in that file. */
  only?: RegExp;
  reason: string;
}

/** Where SQL may stand outside lib/db, each with why. Do not add to it to make a new statement pass: move the statement into lib/db. */
const EXCEPTIONS: Exception[] = [
  {
    path: /^test\/db\/[\w-]+-migration\.test\.ts$/,
    reason: "the migration tests build a store as an older schema left it and check what the SQL migration makes of it: SQL is what they test",
  },
  {
    path: "test/db/postgres.test.ts",
    reason:
      "the PostgreSQL driver's own test (lib/db/pg-sync.ts): statements are its input (placeholders, types, transactions), and the schema check reads both stores' catalogs",
  },
  {
    path: "test/db/sqlite-statements.test.ts",
    reason:
      "the SQLite connection's own test (lib/db/sqlite.ts, statements compiled once): statements are its input (row modes, a text run again inside its own iteration, SQL errors)",
  },
  {
    path: "scripts/db-migrate.mjs",
    only: /DATABASE/,
    reason: "the offline migrator's schema check makes and drops a scratch database: the schema engine's own work, beside prisma/migrations",
  },
  {
    path: "test/jobs/queue.test.ts",
    only: /FROM "Job" WHERE "id" = \? FOR UPDATE/,
    reason: "a second connection holds a job's row lock mid-claim, the situation FOR UPDATE SKIP LOCKED is for: the lock is the test's subject",
  },
  {
    path: "test/helpers/db-inspect.ts",
    reason:
      "what tests read back to check what the app stored (row counts, packed columns, a job's rows): test-only reads kept out of lib, written with lib/db's raw client",
  },
  {
    path: "scripts/bench-turn-bytes.ts",
    reason: "where a SQLite file's bytes go, by table and index (dbstat) and by packed column, is what it measures; it reads a measured file it opened itself",
  },
  {
    path: "scripts/bench-metric-ingest.ts",
    reason: "the limit metric ingest is measured against: the same rows inserted into the same table with plain statements, which lib/db's ingest must not be",
  },
  {
    path: "scripts/bench-prisma-vs-raw.ts",
    reason: "measures Prisma Client against lib/db's raw layer: it replays lib/db's own statements through Prisma's raw API",
  },
  {
    path: "test/arch/sql-only-in-lib-db.test.ts",
    reason: "this rule's own test: the sample statements it must catch",
  },
  {
    path: "test/helpers/postgres.ts",
    only: /DATABASE/,
    reason: "makes the throwaway databases the tests run in on a PostgreSQL server: server administration, not the app's store",
  },
  {
    path: "test/helpers/temp-db.ts",
    only: /DATABASE|pg_database/,
    reason: "clones each test file's PostgreSQL database from a migrated template and drops it: server administration, not the app's store",
  },
  {
    path: "test/platform/import-upload.test.ts",
    only: /\b(?:experiments|runs|params|tags|metrics) (?:\(|VALUES)/,
    reason: "writes an MLflow tracking database (MLflow's own tables) for the importer to read: an import source's format, not our store",
  },
  // The queue's tests are being moved onto lib/db's functions by the queue's owners; delete each
  // entry when its file has no SQL left (this test then reports it as stale).
];

interface Finding {
  file: string;
  line: number;
  text: string;
}

/** Lines holding SQL in one file's text (1-based line numbers). */
function sqlLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  text.split("\n").forEach((l, i) => {
    if (SQL.some((re) => re.test(l))) out.push({ line: i + 1, text: l.trim() });
  });
  return out;
}

function* sourceFiles(root: string, dir = ""): Generator<string> {
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (SKIP_DIRS.has(e.name) || e.name.startsWith(".") || SQL_HOMES.includes(`${rel}/`)) continue;
      yield* sourceFiles(root, rel);
    } else if (EXTENSIONS.some((x) => e.name.endsWith(x)) && !e.name.endsWith(".d.ts")) yield rel;
  }
}

const covers = (x: Exception, file: string) => (typeof x.path === "string" ? x.path === file : x.path.test(file));

/** SQL outside lib/db under `root` that no exception allows, and the exceptions that allowed nothing. */
function checkSqlPlacement(root: string, exceptions: Exception[] = EXCEPTIONS): { findings: Finding[]; stale: Exception[] } {
  const findings: Finding[] = [];
  const used = new Set<Exception>();
  for (const file of sourceFiles(root)) {
    for (const hit of sqlLines(fs.readFileSync(path.join(root, file), "utf8"))) {
      const x = exceptions.find((e) => covers(e, file) && (!e.only || e.only.test(hit.text)));
      if (x) used.add(x);
      else findings.push({ file, ...hit });
    }
  }
  return { findings, stale: exceptions.filter((x) => !used.has(x)) };
}

const tree = useScratchTrees("tl-sql-");

describe("SQL only in lib/db", () => {
  it("this repository has no SQL statement outside lib/db but the listed exceptions, and every exception is still needed", () => {
    const { findings, stale } = checkSqlPlacement(ROOT);
    expect(findings.map((f) => `${f.file}:${f.line}: ${f.text.slice(0, 160)}`)).toEqual([]);
    expect(stale.map((x) => `${String(x.path)}: ${x.reason}`)).toEqual([]);
  });

  it("catches a statement in any of its forms, in scripts, tests and product code alike", () => {
    const statements = [
      'db.prepare(`SELECT "id" FROM "Run" WHERE "name" = ?`)',
      'db.prepare(`SELECT COUNT(*) FROM "Job"`)',
      "await c.query(`SELECT pg_database_size(current_database())`)",
      'db.prepare(`SELECT 1 FROM "Run"`)',
      'const q = `SELECT t."id" ` + from;',
      'db.prepare(`INSERT INTO "Run" ("id") VALUES (?)`)',
      `db.prepare(\`UPDATE "Run" SET "status" = 'succeeded'\`)`,
      'db.prepare(`DELETE FROM "StepCreditSummary" WHERE "runId" = ?`)',
      'admin.exec(`CREATE DATABASE "x"`)',
      'db.exec(`CREATE TABLE "Shapes" ("i" INTEGER)`)',
      'db.prepare(`PRAGMA table_info("Run")`)',
      'db.pragma("wal_checkpoint(TRUNCATE)")',
      'db.prepare("VACUUM ANALYZE").run()',
      "db.prepare(`EXPLAIN QUERY PLAN SELECT 1`)",
      'client.query(copyFrom(`COPY "Trajectory" (` + cols + ") FROM STDIN"))',
      "await prisma.$queryRawUnsafe(sql)",
      'await client.query("BEGIN")',
    ];
    const files = Object.fromEntries(statements.map((s, i) => [`${["app", "scripts", "test/x", "workers"][i % 4]}/f${i}.ts`, `const a = 1;\n${s};\n`]));
    const { findings } = checkSqlPlacement(tree(files), []);
    expect(findings.map((f) => f.text).sort()).toEqual(statements.map((s) => `${s};`).sort());
    expect(findings.every((f) => f.line === 2)).toBe(true);
  });

  it("passes lib/db, migrations and generated code, prose that mentions SQL words, and what an exception allows", () => {
    const root = tree({
      "lib/db/runs.ts": 'db.prepare(`SELECT "id" FROM "Run"`);',
      "prisma/migrations/0001/x.mjs": "db.exec(`CREATE TABLE x (a)`);",
      "lib/generated/prisma/client.js": "const q = `SELECT * FROM x`;",
      "app/page.tsx": "// select the runs from the list, update the page and delete nothing\nconst label = 'Select a run';\n",
      "test/imp.test.ts": "py(`CREATE TABLE experiments (id INTEGER);\nINSERT INTO experiments VALUES (1);`);\n",
    });
    const only = { path: "test/imp.test.ts", only: /experiments/, reason: "a foreign format" };
    expect(checkSqlPlacement(root, [only])).toEqual({ findings: [], stale: [] });
    // the exception allows its lines only: another statement in the same file is still found
    fs.appendFileSync(path.join(root, "test/imp.test.ts"), 'db.prepare(`SELECT COUNT(*) FROM "Run"`);\n');
    expect(checkSqlPlacement(root, [only]).findings.map((f) => f.line)).toEqual([3]);
    // an exception that matches nothing is reported, so the list only shrinks
    const unused = { path: "scripts/gone.ts", reason: "moved" };
    expect(checkSqlPlacement(root, [only, unused]).stale).toEqual([unused]);
  });
});
