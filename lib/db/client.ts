// Prisma Client over the store, for test fixtures and the Prisma-vs-raw benchmark
// (scripts/bench-prisma-vs-raw.ts): the app's stores go through lib/db's raw layer (raw.ts), and
// Prisma stays the source of the schema, the migrations and the row types. Prisma 7 needs a driver
// adapter: better-sqlite3 for the embedded file, pg for a postgresql:// URL. The two generated
// clients (lib/generated/prisma, lib/generated/prisma-pg) come from the same data model.
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaClient } from "../generated/prisma/client";
import { createPostgresPrisma } from "./client-pg";
import { databaseUrl, isPostgres, sqlitePath } from "./url";
import { openSqlite } from "./sqlite";

/** A client for the store at `url`: SQLite's for a file: URL, PostgreSQL's (lib/db/client-pg.ts) otherwise. */
export function createPrisma(url = databaseUrl()): PrismaClient {
  if (isPostgres(url)) return createPostgresPrisma(url);
  // Apply the connection pragmas (WAL, busy timeout) once on the file before Prisma opens it.
  openSqlite(sqlitePath(url)).close();
  // A generous busy timeout: several worker processes and the web server share one file.
  const adapter = new PrismaBetterSqlite3({ url, timeout: 15_000 });
  return new PrismaClient({ adapter });
}
