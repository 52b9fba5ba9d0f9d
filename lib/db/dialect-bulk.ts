// Where SQLite and PostgreSQL differ in the benchmarks' bulk loads and size figures
// (lib/db/bulk-load.ts), both spellings side by side, as lib/db/dialect.ts keeps them for the app's
// statements: a loader of rows (SQLite: multi-row INSERTs in one transaction a write; PostgreSQL:
// COPY, the fastest way in), the database's and tables' bytes, and what follows a bulk load.
import pg from "pg";
import { insertRows, isPostgresDb, openRawDb, type RawDb } from "./raw";
import { isPostgres } from "./url";

/** A column value as the loaders take it. */
export type Cell = string | number | boolean | null | Uint8Array;
/** Rows of one table: its name, the columns in row order, and the rows. */
export type BulkTable = readonly [table: string, cols: readonly string[], rows: readonly (readonly Cell[])[]];

export interface BulkSink {
  /** Writes rows of tables in the given order (parents first), as one transaction. */
  write(tables: readonly BulkTable[]): Promise<void>;
  close(): Promise<void>;
}

export interface BulkDialect {
  readonly name: "sqlite" | "postgresql";
  /** A loader into the store at `url`, on a connection of its own. */
  openSink(url: string): Promise<BulkSink>;
  /** The database's bytes in use (tables, indexes and, on PostgreSQL, TOAST); SQLite's WAL is checkpointed first. */
  databaseBytes(db: RawDb): number;
  /** Bytes of each named table with its indexes (and TOAST). */
  tableBytes(db: RawDb, tables: readonly string[]): Record<string, number>;
  /** What the store's own maintenance does after a bulk load, before anything is timed: PostgreSQL's VACUUM ANALYZE (the planner needs row counts). */
  settle(db: RawDb): void;
}

/** What sqliteBytesInUse needs of a connection: a better-sqlite3 Database (a read-only one too) or a RawDb. */
export interface PragmaReader {
  prepare(sql: string): { pluck(): { get(): unknown } };
}

const quoted = (names: readonly string[]) => names.map((c) => `"${c}"`).join(",");

/** A SQLite database's bytes in use as a reader sees them (pages committed to the WAL included, free pages not). */
export function sqliteBytesInUse(db: PragmaReader): number {
  const n = (k: string) => Number(db.prepare(`PRAGMA ${k}`).pluck().get());
  return (n("page_count") - n("freelist_count")) * n("page_size");
}

export const SQLITE_BULK: BulkDialect = {
  name: "sqlite",
  async openSink(url) {
    const db = openRawDb(url);
    db.pragma("synchronous = OFF"); // a bulk load: no fsync per transaction (the rows are the same)
    db.pragma("foreign_keys = OFF"); // parents come first in every write; checking each row only slows the load
    const ROWS = 50; // rows a statement, as writeRolloutStep inserts turns
    const tx = db.transaction((tables: readonly BulkTable[]) => {
      for (const [table, cols, rows] of tables) {
        const values: unknown[] = [];
        for (const r of rows) for (const v of r) values.push(typeof v === "boolean" ? (v ? 1 : 0) : v);
        insertRows(db, `INSERT INTO "${table}" (${quoted(cols)})`, cols.length, values, "", ROWS);
      }
    });
    return { write: async (t) => void tx(t), close: async () => void db.close() };
  },
  databaseBytes(db) {
    db.pragma("wal_checkpoint(TRUNCATE)");
    return sqliteBytesInUse(db);
  },
  tableBytes(db, tables) {
    const rows = db
      .prepare(`SELECT m."tbl_name" AS name, SUM(d."pgsize") AS bytes FROM dbstat d JOIN sqlite_master m ON m."name" = d."name" GROUP BY m."tbl_name"`)
      .all() as { name: string; bytes: number }[];
    const by = new Map(rows.map((r) => [r.name, Number(r.bytes)]));
    return Object.fromEntries(tables.map((t) => [t, by.get(t) ?? 0]));
  },
  settle() {
    // SQLite keeps no statistics the benchmarks' queries depend on
  },
};

/** COPY's text format: backslash escapes, \N for NULL, t/f booleans, bytea as \\x hex. */
const copyCell = (v: Cell) =>
  v === null
    ? "\\N"
    : v instanceof Uint8Array
      ? `\\\\x${Buffer.from(v).toString("hex")}`
      : typeof v === "boolean"
        ? v
          ? "t"
          : "f"
        : typeof v === "number"
          ? String(v)
          : v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");

export const POSTGRESQL_BULK: BulkDialect = {
  name: "postgresql",
  async openSink(url) {
    const { from: copyFrom } = await import("pg-copy-streams"); // a development dependency: loaded only by a load
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const copy = (table: string, cols: readonly string[], rows: readonly (readonly Cell[])[]) =>
      new Promise<void>((resolve, reject) => {
        const stream = client.query(copyFrom(`COPY "${table}" (${quoted(cols)}) FROM STDIN`));
        stream.on("error", reject);
        stream.on("finish", resolve);
        let i = 0;
        const pump = () => {
          while (i < rows.length) {
            let chunk = "";
            for (const end = Math.min(rows.length, i + 2000); i < end; i++) chunk += rows[i].map(copyCell).join("\t") + "\n";
            if (!stream.write(chunk)) return void stream.once("drain", pump);
          }
          stream.end();
        };
        pump();
      });
    return {
      async write(tables) {
        await client.query("BEGIN");
        try {
          for (const [table, cols, rows] of tables) await copy(table, cols, rows);
          await client.query("COMMIT");
        } catch (e) {
          await client.query("ROLLBACK").catch(() => undefined);
          throw e;
        }
      },
      close: () => client.end(),
    };
  },
  databaseBytes: (db) => Number(db.prepare(`SELECT pg_database_size(current_database())`).pluck().get()),
  tableBytes(db, tables) {
    return Object.fromEntries(tables.map((t) => [t, Number(db.prepare(`SELECT pg_total_relation_size(quote_ident(?)::regclass)`).pluck().get(t))]));
  },
  settle(db) {
    db.prepare(`VACUUM ANALYZE`).run();
  },
};

/** The bulk dialect of a connection's store, or of a DATABASE_URL. */
export const bulkDialect = (db: RawDb | string): BulkDialect => ((typeof db === "string" ? isPostgres(db) : isPostgresDb(db)) ? POSTGRESQL_BULK : SQLITE_BULK);
