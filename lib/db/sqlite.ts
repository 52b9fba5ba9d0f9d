// SQLite-specific fast paths. Everything dialect-specific stays in lib/db: bulk inserts and
// fenced write transactions use better-sqlite3 directly (Prisma createMany is ~10x slower here).
import Database from "better-sqlite3";
import { assertStoreServable, databaseUrl, sqlitePath } from "./url";

export type RawDb = Database.Database;

/** Opens the file with the pragmas every TurnLens connection uses. */
export function openSqlite(file: string): RawDb {
  const db = new Database(file, { timeout: 15_000 });
  db.pragma("journal_mode = WAL"); // readers never block the writer; persistent on the file
  db.pragma("synchronous = NORMAL"); // durable at checkpoints; safe with WAL
  db.pragma("foreign_keys = ON");
  return db;
}

let raw: RawDb | undefined;

const statements = new WeakMap<RawDb, Map<string, Database.Statement>>();

/**
 * The connection's prepared statement for `sql`, prepared once (preparing costs ~20-100 us, a
 * fixed cost of every ingest request otherwise). Only for statements used in their default mode:
 * raw()/pluck() would change the shared statement for every caller.
 */
export function cachedStatement(db: RawDb, sql: string): Database.Statement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map()));
  let st = m.get(sql);
  if (!st) m.set(sql, (st = db.prepare(sql)));
  return st;
}

/** Process-wide raw connection for the bulk paths (same file as the Prisma client). */
export function getRawDb(): RawDb {
  if (!raw || !raw.open) {
    assertStoreServable();
    raw = openSqlite(sqlitePath(databaseUrl()));
  }
  return raw;
}

/** Prisma's DateTime text format on SQLite (adapter default "iso8601"). */
export function sqliteDateTime(d: Date = new Date()): string {
  return d.toISOString().replace("Z", "+00:00");
}

/** A job's lease: writes made on its behalf apply only while the job still holds it. */
export interface Fence {
  jobId: string;
  leaseToken: string;
}

export class LeaseLostError extends Error {
  constructor(jobId: string) {
    super(`job ${jobId} no longer holds its lease (canceled, expired or claimed by another worker); write discarded`);
    this.name = "LeaseLostError";
  }
}

/**
 * Runs fn in one IMMEDIATE transaction (takes the write lock up front, so no SQLITE_BUSY on upgrade).
 * With a fence, the transaction first checks the job is still running under that lease token and
 * rolls back everything if not: a worker that lost its lease can never write twice.
 */
export function writeTransaction<T>(fence: Fence | null, fn: (db: RawDb) => T, db: RawDb = getRawDb()): T {
  const tx = db.transaction(() => {
    if (fence) {
      const r = db
        .prepare(`UPDATE "Job" SET "heartbeatAt" = ? WHERE "id" = ? AND "leaseToken" = ? AND "status" = 'running'`)
        .run(sqliteDateTime(), fence.jobId, fence.leaseToken);
      if (r.changes !== 1) throw new LeaseLostError(fence.jobId);
    }
    return fn(db);
  });
  return tx.immediate();
}
