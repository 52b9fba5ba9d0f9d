// Offline replacement for `prisma migrate dev` / `migrate deploy`, for both providers: drives
// @prisma/schema-engine-wasm (npm) through a driver adapter (better-sqlite3 for file: URLs,
// pg for postgresql:// URLs), so the native schema-engine binary (downloaded from binaries.prisma.sh)
// is not needed. One data model (prisma/schema.prisma); the PostgreSQL schema is derived from it
// (scripts/db-schema.mjs) and keeps its own history in prisma/migrations-postgresql.
// usage: node scripts/db-migrate.mjs deploy | dev <name> | diff | check
//   check: exit 1 when the provider's migration history does not produce schema.prisma (prints the SQL missing)
// Users with internet access can use the normal CLI instead (`npx prisma migrate deploy`): same files, same bookkeeping.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as bg from "@prisma/schema-engine-wasm/schema_engine_bg";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import { migrationsDir as historyDir, providerOf, schemaFor, SCHEMA_PATH } from "./db-schema.mjs";

const bgPath = fileURLToPath(import.meta.resolve("@prisma/schema-engine-wasm/schema_engine_bg"));
const wasmModule = new WebAssembly.Module(fs.readFileSync(path.join(path.dirname(bgPath), "schema_engine_bg.wasm")));
const instance = new WebAssembly.Instance(wasmModule, { "./schema_engine_bg.js": bg });
bg.__wbg_set_wasm(instance.exports);
instance.exports.__wbindgen_start?.();

const [cmd = "deploy", name = "init"] = process.argv.slice(2);
const url = process.env.DATABASE_URL || "file:./data/turnlens.db";
const provider = providerOf(url);
const migrationsDir = historyDir(provider);
if (provider === "sqlite") fs.mkdirSync(path.dirname(path.resolve(url.slice(5))), { recursive: true });
const schema = { files: [{ path: SCHEMA_PATH, content: schemaFor(provider) }] };
// The trajectory search's word index is a table Prisma cannot model (an FTS5 virtual table and its
// shadow tables on SQLite, tsvector columns on PostgreSQL): the migrations create it, the schema
// comparison leaves it out.
const SEARCH_TABLES = ["TrajectoryText", ...["data", "idx", "docsize", "config"].map((s) => `TrajectoryText_${s}`)];
const filters = { externalTables: provider === "sqlite" ? SEARCH_TABLES : SEARCH_TABLES.map((t) => `public.${t}`), externalEnums: [] };

function migrationsList() {
  fs.mkdirSync(migrationsDir, { recursive: true });
  const lockPath = path.join(migrationsDir, "migration_lock.toml");
  const dirs = fs
    .readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  return {
    baseDir: migrationsDir,
    lockfile: { path: "migration_lock.toml", content: fs.existsSync(lockPath) ? fs.readFileSync(lockPath, "utf8") : null },
    shadowDbInitScript: "",
    migrationDirectories: dirs.map((d) => {
      const f = path.join(migrationsDir, d, "migration.sql");
      return {
        path: d,
        migrationFile: {
          path: "migration.sql",
          content: fs.existsSync(f) ? { tag: "ok", value: fs.readFileSync(f, "utf8") } : { tag: "error", value: "missing" },
        },
      };
    }),
  };
}

// Workaround: on the shadow DB the wasm engine sends whole multi-statement migration scripts
// through executeRaw, which better-sqlite3 rejects; route those to executeScript (db.exec).
class Factory extends PrismaBetterSqlite3 {
  async connectToShadowDb() {
    const a = await super.connectToShadowDb();
    const raw = a.executeRaw.bind(a);
    a.executeRaw = async (q) => (q.args.length === 0 ? (await a.executeScript(q.sql), 0) : raw(q));
    return a;
  }
}
/** PostgreSQL through @prisma/adapter-pg; its shadow DB (for dev and check) is a database made and dropped here. */
async function pgFactory() {
  const { PrismaPg } = await import("@prisma/adapter-pg");
  // Workaround: adapter-pg 7.10's own connectToShadowDb drops the shadow database before closing
  // its pool ("is being accessed by other users"); close first, then drop.
  // Workaround: the adapter refuses PostgreSQL's one-byte "char" type (OID 18), which the engine's
  // catalog queries return (pg_class.relkind...); it is text, so it is read as text.
  class PgFactory extends PrismaPg {
    async connect() {
      const a = await super.connect();
      const io = a.performIO.bind(a);
      a.performIO = async (q) => {
        const r = await io(q);
        for (const f of r.fields) if (f.dataTypeID === 18) f.dataTypeID = 25;
        return r;
      };
      return a;
    }
    async connectToShadowDb() {
      const admin = await this.connect();
      const database = `prisma_migrate_shadow_db_${globalThis.crypto.randomUUID()}`;
      await admin.executeScript(`CREATE DATABASE "${database}"`);
      const shadow = await new PgFactory({ ...this.config, database }).connect();
      const dispose = shadow.dispose.bind(shadow);
      shadow.dispose = async () => {
        await dispose();
        await admin.executeScript(`DROP DATABASE "${database}"`);
        await admin.dispose();
      };
      return shadow;
    }
  }
  const u = new URL(url);
  // Fields, not a connectionString: the shadow DB is opened as { ...config, database }, and pg
  // lets a connectionString override that database.
  return new PgFactory({
    port: u.port ? Number(u.port) : undefined,
    user: decodeURIComponent(u.username) || undefined,
    password: decodeURIComponent(u.password) || undefined,
    database: decodeURIComponent(u.pathname.slice(1)) || undefined,
    host: u.searchParams.get("host") ?? (decodeURIComponent(u.hostname) || undefined),
  });
}
const adapter = bindMigrationAwareSqlAdapterFactory(provider === "sqlite" ? new Factory({ url }) : await pgFactory());
const engine = await bg.SchemaEngine.new(
  { datamodels: schema.files.map((f) => [f.path, f.content]) },
  (log) => process.env.DEBUG && console.error(log),
  adapter,
);

if (cmd === "check") {
  // The history replayed on a shadow DB, diffed against the schema: empty when in step.
  const r = await engine.diff({
    from: { tag: "migrations", ...migrationsList() },
    to: { tag: "schemaDatamodel", ...schema },
    script: true,
    shadowDatabaseUrl: null,
    exitCode: null,
    filters,
  });
  const missing = r.stdout.trim();
  if (missing && missing !== "-- This is an empty migration.") {
    console.error(
      `${path.relative(process.cwd(), migrationsDir)} is behind ${SCHEMA_PATH}; run \`${provider === "sqlite" ? "" : "node --import tsx scripts/pg-temp.ts -- "}node scripts/db-migrate.mjs dev <name>\`${provider === "sqlite" ? " with DATABASE_URL set to a scratch SQLite file" : ""}. Missing:\n${missing}`,
    );
    process.exitCode = 1;
  } else console.log(`${provider}: migrations in step with ${SCHEMA_PATH}`);
} else if (cmd === "diff") {
  const r = await engine.diff({
    from: { tag: "empty" },
    to: { tag: "schemaDatamodel", ...schema },
    script: true,
    shadowDatabaseUrl: null,
    exitCode: null,
    filters,
  });
  console.log(r.stdout);
} else if (cmd === "dev") {
  // devDiagnostic builds the migration-history schema on a shadow DB (adapter.connectToShadowDb)
  // and caches it; createMigration then reuses that cache.
  await engine.applyMigrations({ migrationsList: migrationsList(), filters }); // also creates _prisma_migrations
  const diag = await engine.devDiagnostic({ migrationsList: migrationsList(), filters });
  if (diag.action.tag === "reset") throw new Error("dev DB drifted, reset needed: " + diag.action.reason);
  const out = await engine.createMigration({ draft: false, migrationName: name, migrationsList: migrationsList(), schema, filters });
  if (out.migrationScript) {
    const dir = path.join(migrationsDir, out.generatedMigrationName);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `migration.${out.extension}`), out.migrationScript);
    const lock = path.join(migrationsDir, "migration_lock.toml");
    if (!fs.existsSync(lock)) fs.writeFileSync(lock, `provider = "${out.connectorType}"\n`);
    console.log("created", out.generatedMigrationName);
  } else console.log("schema unchanged, no migration created");
}
if (cmd === "dev" || cmd === "deploy") {
  const r = await engine.applyMigrations({ migrationsList: migrationsList(), filters });
  console.log("applied:", r.appliedMigrationNames);
}
engine.free?.();
// A PostgreSQL connection the engine left checked out would keep the process alive for pg's 10 s
// idle timeout; everything is written by now (stdout to a pipe or file is synchronous on Linux).
if (provider === "postgresql") setTimeout(() => process.exit(), 200).unref();
