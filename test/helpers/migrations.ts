// What the migration tests share: a migration's SQL, the SQL of every migration before it (the
// database a user had before it), and a PostgreSQL database to run them on.
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { startPostgres, type TempPostgres } from "./postgres";
import { ROOT } from "./temp-db";

const DIRS = { sqlite: "prisma/migrations", postgresql: "prisma/migrations-postgresql" } as const;
export type Provider = keyof typeof DIRS;

/** The migration's SQL for the provider. */
export function migrationSql(provider: Provider, name: string): string {
  return fs.readFileSync(path.join(ROOT, DIRS[provider], name, "migration.sql"), "utf8");
}

/** The SQL of every migration before `name`, in order. */
export function migrationsBefore(provider: Provider, name: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, DIRS[provider]), { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name < name)
    .map((d) => d.name)
    .sort()
    .map((m) => migrationSql(provider, m));
}

/** A client on a fresh database of a temporary cluster for the enclosing describe (its hooks registered here). */
export function usePostgresClient(database: string): () => pg.Client {
  let server: TempPostgres;
  let client: pg.Client;
  beforeAll(async () => {
    server = await startPostgres();
    client = new pg.Client({ connectionString: await server.createDatabase(database) });
    await client.connect();
  }, 120_000);
  afterAll(async () => {
    await client?.end();
    await server?.stop();
  }, 60_000);
  return () => client;
}
