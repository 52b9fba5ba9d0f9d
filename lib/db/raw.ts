// The raw connection lib/db's fast paths use, on either store: better-sqlite3 for the embedded
// file, libpq (lib/db/pg-sync.ts) for PostgreSQL. Both are synchronous with one interface, so every
// fenced write and bulk path is the same code; where the SQL dialects differ, a statement takes its
// fragment from lib/db/dialect.ts, where both spellings sit side by side.
import { assertStoreServable, databaseUrl, isPostgres, sqlitePath } from "./url";
import { openSqliteCompiledOnce } from "./sqlite";
import { PgError, PgSyncDb, type RawStatement } from "./pg-sync";
import { NotFoundError } from "../schemas/errors";

export type { RawStatement } from "./pg-sync";

type Txn<A extends unknown[], T> = ((...args: A) => T) & {
  deferred(...args: A): T;
  immediate(...args: A): T;
  exclusive(...args: A): T;
  /** PostgreSQL only (pg-sync.ts): the write lock taken shared, for run-scoped writes */
  shared?(...args: A): T;
};

/** What lib/db needs of a connection: PgSyncDb, or better-sqlite3's Database with a prepare() that compiles each SQL text once (lib/db/sqlite.ts). */
export interface RawDb {
  readonly open: boolean;
  prepare(sql: string): RawStatement;
  transaction<A extends unknown[], T>(fn: (...args: A) => T): Txn<A, T>;
  close(): unknown;
  /** SQLite pragmas (a WAL checkpoint); a no-op on PostgreSQL. */
  pragma(source: string): unknown;
  /** Whether a transaction is open on this connection (a nested writeTransaction becomes a savepoint). */
  readonly inTransaction: boolean;
}

export function isPostgresDb(db: RawDb): boolean {
  return db instanceof PgSyncDb;
}

/** A new connection to `url` (a file: SQLite URL or a postgresql:// one). */
export function openRawDb(url = databaseUrl()): RawDb {
  if (isPostgres(url)) return new PgSyncDb(url);
  return openSqliteCompiledOnce(sqlitePath(url)) as unknown as RawDb;
}

/**
 * Whether a worker thread may open its own connection to the store at `url`: yes for SQLite
 * (better-sqlite3 is context-aware), no for PostgreSQL (the libpq addon loads in one thread per process).
 */
export function connectsFromThreads(url = databaseUrl()): boolean {
  return !isPostgres(url);
}

let raw: RawDb | undefined;

/**
 * Inserts rows given as one flat array (`width` values a row) with multi-row statements: chunks of
 * `maxRows`, the rest in power-of-two chunks, so at most log2(maxRows) + 1 statement shapes are
 * prepared. One statement per chunk instead of per row: on PostgreSQL each statement is a network
 * round trip, on SQLite it still saves 10-20% of CPU per row. `head` is `INSERT INTO "T" (cols)`,
 * `tail` what follows VALUES (an ON CONFLICT clause); rows of one call must not conflict with each other.
 * `tuple` is a row's VALUES entry, `width` placeholders (by default plain ones; a store may wrap one
 * in a function call). A `tail` ending in a RETURNING clause makes the statements return the inserted
 * rows' columns (generated keys: no second statement to read them back), which this returns.
 */
export function insertRows(
  db: RawDb,
  head: string,
  width: number,
  values: unknown[],
  tail = "",
  maxRows = 200,
  tuple = `(${Array(width).fill("?").join(",")})`,
): unknown[] {
  const n = values.length / width;
  const returning = /\bRETURNING\b/i.test(tail);
  const out: unknown[] = [];
  for (let i = 0; i < n; ) {
    let rows = Math.min(maxRows, n - i);
    if (rows < maxRows) rows = 2 ** Math.floor(Math.log2(rows));
    const statement = db.prepare(`${head} VALUES ${Array(rows).fill(tuple).join(",")} ${tail}`);
    const args = i === 0 && rows === n ? values : values.slice(i * width, (i + rows) * width);
    if (returning) for (const row of statement.all(args)) out.push(row);
    else statement.run(args);
    i += rows;
  }
  return out;
}

/** Process-wide raw connection for the bulk paths (same store as the Prisma client). */
export function getRawDb(): RawDb {
  if (!raw?.open) {
    assertStoreServable();
    raw = openRawDb(databaseUrl());
  }
  return raw;
}

/** NotFoundError unless the run exists. Reads that found rows of it skip it: on PostgreSQL each statement is a round trip. */
export function assertRunExists(id: string, db: RawDb = getRawDb()): void {
  if (db.prepare(`SELECT 1 FROM "Run" WHERE "id" = ?`).get(id) === undefined) throw new NotFoundError("run", id);
}

/** DateTime as stored: Prisma's text format on SQLite, accepted as UTC by PostgreSQL's timestamp(3). */
export function dbDateTime(d: Date = new Date()): string {
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

/** What a write transaction touches: one run's rows or one job's (row-level lock on PostgreSQL) or, without a scope, anything. */
export type WriteScope = { runId: string } | { jobId: string };

/** PostgreSQL's deadlock_detected: one of two transactions that locked rows in opposite orders is rolled back. */
const DEADLOCK = "40P01";
const DEADLOCK_RETRIES = 3;

/**
 * Runs fn in one write transaction. With a fence, the transaction first checks the job is still
 * running under that lease token and rolls back everything if not: a worker that lost its lease can
 * never write twice.
 *
 * Locking. SQLite has one writer: the transaction is IMMEDIATE (takes the write lock up front, no
 * SQLITE_BUSY on upgrade). On PostgreSQL, a write without a scope takes one exclusive advisory lock
 * (the same one-writer rule, for read-then-write paths that span runs); a write scoped to a run (or a
 * job: its log lines) takes that lock shared and then its Run (Job) row (FOR NO KEY UPDATE: inserts referencing the run are not blocked), so writers of different runs (trainers, the
 * ingest processes) proceed together while one run's read-then-write paths (its next trajectory
 * sequence, its idempotency records, its metric rollups) stay serialised. A deadlock between row
 * locks taken in other orders (a fenced job row, then a run) is retried from the start.
 *
 * Nesting. On SQLite a nested call is a savepoint (better-sqlite3). On PostgreSQL a nested call
 * without a fence runs inside the enclosing transaction, with no savepoint (each statement is a
 * round trip): an error in it rolls the whole transaction back, which is what every caller wants.
 */
export function writeTransaction<T>(fence: Fence | null, fn: (db: RawDb) => T, db: RawDb = getRawDb(), scope?: WriteScope): T {
  if (!(db instanceof PgSyncDb)) {
    return db
      .transaction(() => {
        if (fence) checkFence(db, fence);
        return fn(db);
      })
      .immediate();
  }
  const pg = db;
  const outermost = !pg.inTransaction;
  // The scope's row lock, unless an enclosing transaction of this connection took it. Without a
  // fence it goes with BEGIN in one round trip; with one, after the fence (the job row first, then
  // the run: one order everywhere).
  const held = scope ? ("runId" in scope ? `run:${scope.runId}` : `job:${scope.jobId}`) : null;
  const rowLock =
    scope && held && !pg.heldLocks.has(held)
      ? "runId" in scope
        ? `SELECT 1 FROM "Run" WHERE "id" = ${pg.literal(scope.runId)} FOR NO KEY UPDATE`
        : `SELECT 1 FROM "Job" WHERE "id" = ${pg.literal(scope.jobId)} FOR NO KEY UPDATE`
      : "";
  if (!outermost && !fence) {
    // Inside an enclosing transaction (an idempotent ingest around its write): no savepoint, two
    // round trips fewer. An error rolls the whole transaction back, as no caller catches one inside.
    if (rowLock) pg.exec(rowLock);
    return fn(pg);
  }
  const tx = pg.transaction(
    () => {
      if (fence) {
        checkFence(pg, fence);
        if (rowLock) pg.exec(rowLock);
      }
      // a lock taken inside a savepoint is given back if it rolls back: only the outermost's count as held
      if (held && outermost) pg.heldLocks.add(held);
      return fn(pg);
    },
    fence ? "" : rowLock,
  );
  for (let attempt = 1; ; attempt++) {
    try {
      return scope ? tx.shared() : tx.immediate();
    } catch (e) {
      if (!(outermost && e instanceof PgError && e.code === DEADLOCK && attempt < DEADLOCK_RETRIES)) throw e;
    }
  }
}

/** The job still runs under this lease, or LeaseLostError (the caller's transaction rolls back). */
function checkFence(db: RawDb, fence: Fence): void {
  const r = db
    .prepare(`UPDATE "Job" SET "heartbeatAt" = ? WHERE "id" = ? AND "leaseToken" = ? AND "status" = 'running'`)
    .run(dbDateTime(), fence.jobId, fence.leaseToken);
  if (r.changes !== 1) throw new LeaseLostError(fence.jobId);
}
