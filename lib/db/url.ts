// Where the database lives. Default: the embedded SQLite file data/turnlens.db under the project.
import path from "node:path";

export const DEFAULT_DATABASE_URL = "file:./data/turnlens.db";

/** The configured DATABASE_URL, with a relative SQLite path made absolute against the project root. */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  if (!url.startsWith("file:")) return url;
  const file = url.slice("file:".length);
  if (file === ":memory:") return url;
  return "file:" + path.resolve(projectRoot(), file);
}

export function isSqlite(url = databaseUrl()): boolean {
  return url.startsWith("file:");
}

export function isPostgres(url = databaseUrl()): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** The one check the server (scripts/web-server.mjs), the worker and the process-wide clients make before using the store. */
export function assertStoreServable(url = databaseUrl()): void {
  if (isSqlite(url) || isPostgres(url)) return;
  throw new Error(`DATABASE_URL must be file:... (SQLite) or postgresql://..., got ${url.split(":")[0]}:...`);
}

/** Absolute path of the SQLite file (throws for other databases). */
export function sqlitePath(url = databaseUrl()): string {
  if (!isSqlite(url)) throw new Error(`not a SQLite DATABASE_URL: ${url}`);
  return url.slice("file:".length);
}

/** The project root: TURNLENS_ROOT, else the working directory (npm scripts and Next run from it). */
export function projectRoot(): string {
  return process.env.TURNLENS_ROOT || process.cwd();
}
