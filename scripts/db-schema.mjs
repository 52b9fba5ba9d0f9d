// The data model is ONE file, prisma/schema.prisma (provider "sqlite"). The PostgreSQL variant is
// derived from it, never edited: the provider swapped and the client generated to a second folder
// (a Prisma client is provider-specific). Used by db-migrate.mjs and by setup.sh / db:generate:
//
//   node scripts/db-schema.mjs write-postgresql   writes lib/generated/postgresql.prisma, prints its path
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const SCHEMA_PATH = "prisma/schema.prisma";
export const PG_SCHEMA_PATH = "lib/generated/postgresql.prisma";

/** "postgresql" for a postgres:// or postgresql:// URL, "sqlite" for file:, else an error naming DATABASE_URL. */
export function providerOf(url) {
  if (url.startsWith("file:")) return "sqlite";
  if (/^postgres(ql)?:\/\//.test(url)) return "postgresql";
  throw new Error(`DATABASE_URL must be file:... (SQLite) or postgresql://... (PostgreSQL), got ${url.split(":")[0]}:...`);
}

/** Where each provider's migration history lives (the same schema, one history per dialect). */
export function migrationsDir(provider) {
  return path.join(ROOT, provider === "sqlite" ? "prisma/migrations" : "prisma/migrations-postgresql");
}

/** The schema text for a provider; the PostgreSQL one generates its client into lib/generated/prisma-pg. */
export function schemaFor(provider) {
  const src = fs.readFileSync(path.join(ROOT, SCHEMA_PATH), "utf8");
  if (provider === "sqlite") return src;
  const swap = (text, re, to, what) => {
    if (!re.test(text)) throw new Error(`${SCHEMA_PATH}: cannot derive the PostgreSQL schema, ${what} not found`);
    return text.replace(re, to);
  };
  let out = swap(src, /(datasource db \{[^}]*provider\s*=\s*)"sqlite"/, '$1"postgresql"', 'datasource provider = "sqlite"');
  // The derived file sits in lib/generated/, so the output is relative to that folder.
  out = swap(out, /(output\s*=\s*)"\.\.\/lib\/generated\/prisma"/, '$1"./prisma-pg"', 'generator output "../lib/generated/prisma"');
  return `// GENERATED from ${SCHEMA_PATH} by scripts/db-schema.mjs: edit that file, not this one.\n${out}`;
}

export function writePostgresSchema() {
  const file = path.join(ROOT, PG_SCHEMA_PATH);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, schemaFor("postgresql"));
  return PG_SCHEMA_PATH;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] !== "write-postgresql") {
    console.error("usage: node scripts/db-schema.mjs write-postgresql");
    process.exit(2);
  }
  console.log(writePostgresSchema());
}
