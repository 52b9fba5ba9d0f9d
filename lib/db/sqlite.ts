// The embedded store's connection: better-sqlite3 on one file with the pragmas every TurnLens
// connection uses. Store-agnostic code goes through lib/db/raw.ts.
import Database from "better-sqlite3";
import type { RawStatement } from "./pg-sync";

/** Opens the file with the pragmas every TurnLens connection uses. */
export function openSqlite(file: string): Database.Database {
  const db = new Database(file, { timeout: 15_000 });
  db.pragma("journal_mode = WAL"); // readers never block the writer; persistent on the file
  db.pragma("synchronous = NORMAL"); // durable at checkpoints; safe with WAL
  db.pragma("foreign_keys = ON");
  return db;
}

/** Compiled statements kept per connection (PostgreSQL's connection keeps as many: lib/db/pg-sync.ts). */
const MAX_COMPILED = 500;

type Mode = "rows" | "raw" | "pluck";

/**
 * openSqlite's connection whose prepare() compiles each SQL text once. lib/db prepares at every
 * call (on PostgreSQL the connection keeps each text's named statement the same way), and compiling
 * was a fifth of a run's read on SQLite (`GET /runs/{id}`: 13% of the server's time in
 * better-sqlite3's prepare). A caller's raw() or pluck() belongs to its own handle and is applied
 * to the compiled statement when it runs; one still being iterated is replaced, never shared.
 */
export function openSqliteCompiledOnce(file: string): Omit<Database.Database, "prepare"> & { prepare(sql: string): RawStatement } {
  const db = openSqlite(file);
  const compile = db.prepare.bind(db);
  const compiled = new Map<string, { st: Database.Statement; mode: Mode }>();
  const entry = (sql: string, fresh: boolean) => {
    let e = compiled.get(sql);
    compiled.delete(sql); // set again below, last: the first in the map is the least recently used
    if (!e || fresh) {
      e = { st: compile(sql), mode: "rows" }; // an SQL error throws here, at prepare
      if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    }
    compiled.set(sql, e);
    return e;
  };
  const prepare = (sql: string): RawStatement => {
    let e = entry(sql, false);
    let mode: Mode = "rows";
    const ready = () => {
      if (e.st.busy) e = entry(sql, true); // an iteration of it is still open
      if (e.mode !== mode) {
        if (mode === "raw") e.st.raw(true);
        else if (mode === "pluck") e.st.pluck(true);
        else e.st.raw(false).pluck(false);
        e.mode = mode;
      }
      return e.st;
    };
    const handle: RawStatement = {
      run: (...params) => ready().run(...params),
      get: (...params) => ready().get(...params),
      all: (...params) => ready().all(...params),
      iterate: (...params) => ready().iterate(...params),
      // better-sqlite3's rule: raw and pluck exclude each other, turning one off leaves the other
      pluck(toggle = true) {
        if (toggle || mode === "pluck") mode = toggle ? "pluck" : "rows";
        return this;
      },
      raw(toggle = true) {
        if (toggle || mode === "raw") mode = toggle ? "raw" : "rows";
        return this;
      },
    };
    return handle;
  };
  return Object.assign(db, { prepare });
}
