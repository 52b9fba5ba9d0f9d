// The embedded store's connection: better-sqlite3 on one file with the pragmas every TurnLens
// connection uses. Store-agnostic code goes through lib/db/raw.ts.
import Database from "better-sqlite3";

/** Opens the file with the pragmas every TurnLens connection uses. */
export function openSqlite(file: string): Database.Database {
  const db = new Database(file, { timeout: 15_000 });
  db.pragma("journal_mode = WAL"); // readers never block the writer; persistent on the file
  db.pragma("synchronous = NORMAL"); // durable at checkpoints; safe with WAL
  db.pragma("foreign_keys = ON");
  return db;
}
