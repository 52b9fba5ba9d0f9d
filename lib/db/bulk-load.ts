// The benchmarks' and scale generators' way into the store (scripts/gen-scale-data.ts,
// scripts/bench-storage.ts, scripts/seed-bench-ui.ts, scripts/bench-realistic.ts): rows loaded in
// bulk around writeRolloutStep, and the figures they print (bytes of the database and of its
// tables). Where the stores differ, the spelling comes from lib/db/dialect.ts.
import { bulkDialect, type BulkSink } from "./dialect";
import { getRawDb, type RawDb } from "./raw";

export { sqliteBytesInUse, type BulkSink, type BulkTable, type Cell, type PragmaReader } from "./dialect";

/** A loader of rows into the store at `url` (a connection of its own; close it). */
export function openBulkSink(url: string): Promise<BulkSink> {
  return bulkDialect(url).openSink(url);
}

/** The database's bytes in use, after a WAL checkpoint on SQLite. */
export function databaseBytes(db: RawDb = getRawDb()): number {
  return bulkDialect(db).databaseBytes(db);
}

/** Bytes of each named table with its indexes (and TOAST on PostgreSQL). */
export function tableBytes(tables: readonly string[], db: RawDb = getRawDb()): Record<string, number> {
  return bulkDialect(db).tableBytes(db, tables);
}

/** After a bulk load and before anything is timed: what the store's own maintenance would have done by then. */
export function settleAfterBulkLoad(db: RawDb = getRawDb()): void {
  bulkDialect(db).settle(db);
}

/** Moves SQLite's WAL into the database file and empties it (a file about to be copied or measured); nothing on PostgreSQL. */
export function checkpointWal(db: RawDb = getRawDb()): void {
  db.pragma("wal_checkpoint(TRUNCATE)");
}
