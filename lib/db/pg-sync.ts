// PostgreSQL behind the same synchronous interface lib/db uses for SQLite (better-sqlite3's
// prepare().run/get/all, transaction().immediate()). lib/db's fast paths are synchronous on
// purpose: a fenced write checks the lease and writes in one transaction with no await between,
// so no other request interleaves. libpq's synchronous calls keep that code unchanged on both
// stores (one loopback round trip measured at ~88 us). Values come back shaped as SQLite gives
// them: numbers for every numeric type, 1/0 for booleans, ISO text for timestamps, JSON as text,
// Buffers for bytea, so callers need no per-store decoding.
import { createRequire } from "node:module";

/** What lib/db asks of a prepared statement: PgStatement here, openSqliteCompiledOnce's handle on SQLite (lib/db/sqlite.ts). */
export interface RawStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  pluck(toggle?: boolean): this;
  raw(toggle?: boolean): this;
}

interface Libpq {
  connectSync(conninfo: string): void;
  errorMessage(): string;
  execParams(text: string, params: (string | null)[]): void;
  escapeLiteral(value: string): string;
  exec(text: string): void;
  prepare(name: string, text: string, nParams: number): void;
  execPrepared(name: string, params: (string | null)[]): void;
  resultStatus(): string;
  resultErrorMessage(): string;
  resultErrorFields(): Record<string, string> | undefined;
  ntuples(): number;
  nfields(): number;
  fname(i: number): string;
  ftype(i: number): number;
  getvalue(row: number, col: number): string;
  getisnull(row: number, col: number): boolean;
  cmdTuples(): string;
  finish(): void;
  clear(): void;
}

/** A PostgreSQL error with its SQLSTATE (e.g. 23505 unique_violation) and the statement that failed. */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly sql: string,
  ) {
    super(message);
    this.name = "PgError";
  }
}

/** The advisory lock key of write transactions (exclusive: one writer; shared: run-scoped writers). */
const WRITE_LOCK = 7203;

/** Closed connections' addon objects, kept until libuv has finished closing their handles (close()). */
const closing = new Set<Libpq>();

/**
 * A statement whose text starts with this comment is planned for its own parameters at every call
 * (sent unnamed, never prepared). Every other statement is prepared once per connection, and after
 * five calls PostgreSQL may keep one generic plan for it, which saves the planning of each call
 * (a third of a small read's time on the server). A chart's bucket queries got generic plans that
 * took seconds under load, so they are planned per call.
 */
export const PLAN_PER_CALL = "/* plan per call */";

/** Prepared statements kept per connection. */
const MAX_PREPARED = 500;

// Type OIDs (pg_type) whose text form lib/db wants converted.
const NUMERIC_OIDS = new Set([20, 21, 23, 26, 700, 701, 1700]);
const BOOL_OID = 16;
const BYTEA_OID = 17;
const TIMESTAMP_OIDS = new Set([1114, 1184]);

/** The conversion of a column's text values, chosen once per result column. */
function decoder(oid: number): (text: string) => unknown {
  if (NUMERIC_OIDS.has(oid)) return Number; // "NaN", "Infinity" included
  if (oid === BOOL_OID) return (text) => (text === "t" ? 1 : 0); // SQLite's booleans are 1/0
  if (oid === BYTEA_OID) return (text) => Buffer.from(text.slice(2), "hex"); // bytea_output = hex: "\x..."
  if (TIMESTAMP_OIDS.has(oid)) return isoTimestamp;
  return (text) => text;
}

/** "2026-11-23 11:12:50.12" (timestamp, UTC by convention) -> "2026-11-23T11:12:50.120+00:00", as lib/db writes. */
function isoTimestamp(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d+))?(?:([+-]\d{2})(?::?(\d{2}))?)?$/.exec(text);
  if (!m) return text;
  const ms = (m[3] ?? "").padEnd(3, "0").slice(0, 3);
  const iso = `${m[1]}T${m[2]}.${ms}${m[4] ? `${m[4]}:${m[5] ?? "00"}` : "+00:00"}`;
  return m[4] && m[4] !== "+00" ? new Date(iso).toISOString().replace("Z", "+00:00") : iso;
}

function encode(v: unknown, sql: string): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  if (typeof v === "string") return v;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "boolean") return v ? "true" : "false";
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return "\\x" + Buffer.from(v as Uint8Array).toString("hex");
  if (v instanceof Date) return v.toISOString();
  throw new PgError(`cannot bind a ${typeof v} parameter`, undefined, sql);
}

/**
 * SQLite placeholders (`?` and `@name`) to PostgreSQL's `$n`, outside quoted strings and identifiers.
 * Returns the text and, for named parameters, their names in $n order.
 */
export function toPgPlaceholders(sql: string): { text: string; names: string[] | null } {
  let out = "";
  let n = 0;
  const names: string[] = [];
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end < 0 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === "?") {
      out += "$" + ++n;
    } else if (c === "@" && /[A-Za-z_]/.test(sql[i + 1] ?? "")) {
      const name = /^[A-Za-z_]\w*/.exec(sql.slice(i + 1))![0];
      let k = names.indexOf(name);
      if (k < 0) k = names.push(name) - 1;
      out += "$" + (k + 1);
      i += name.length;
    } else {
      out += c;
    }
  }
  if (n > 0 && names.length > 0) throw new Error("mixing ? and @name placeholders in one statement");
  return { text: out, names: names.length ? names : null };
}

function flatten(params: unknown[]): unknown[] {
  return params.length === 1 && Array.isArray(params[0]) ? (params[0] as unknown[]) : params;
}

/** The libpq addon's class, loaded on first use (require caches it); its absence explained. */
function libpqConstructor(): new () => Libpq {
  try {
    return createRequire(import.meta.url)("libpq") as new () => Libpq;
  } catch (e) {
    throw new Error(
      "PostgreSQL needs the native libpq module (optional dependency `libpq`, built with node-gyp against libpq-dev): " +
        "apt-get install -y libpq-dev && npm rebuild libpq --foreground-scripts. Cause: " +
        (e as Error).message,
    );
  }
}

export class PgSyncDb {
  private pq: Libpq;
  private statementNames = new Map<string, string>();
  private preparedCount = 0;
  private depth = 0;
  open = true;
  readonly dialect = "postgresql" as const;

  constructor(readonly url: string) {
    const Pq = libpqConstructor();
    this.pq = new Pq();
    try {
      this.pq.connectSync(url);
    } catch (e) {
      throw new Error(`cannot connect to PostgreSQL at ${redact(url)}: ${this.pq.errorMessage() || (e as Error).message}`);
    }
    this.exec("SET TIME ZONE 'UTC'"); // timestamps are stored as UTC wall time, as Prisma writes them
  }

  prepare(sql: string): PgStatement {
    return new PgStatement(this, sql);
  }

  /** Runs statements without parameters (DDL, BEGIN/COMMIT). */
  exec(sql: string): void {
    this.pq.exec(sql);
    this.check(sql);
    this.pq.clear();
  }

  /**
   * Row locks the current outermost transaction took when it began (lib/db/raw.ts writeTransaction's
   * scopes, as "run:<id>" or "job:<id>"): a nested transaction of the same scope holds them already.
   * Emptied when the outermost transaction ends.
   */
  readonly heldLocks = new Set<string>();

  /** A string as an SQL literal (libpq's escaping), for statements sent without parameters. */
  literal(value: string): string {
    return this.pq.escapeLiteral(value);
  }

  /**
   * better-sqlite3's transaction(): a function running fn in BEGIN/COMMIT, a SAVEPOINT when nested.
   * `prologue`: statements (no parameters: see literal) sent with BEGIN in the same round trip.
   */
  transaction<A extends unknown[], T>(fn: (...args: A) => T, prologue = "") {
    const run = (mode: "deferred" | "immediate" | "shared", args: A): T => {
      const nested = this.depth > 0;
      const sp = `tl_sp_${this.depth}`;
      // IMMEDIATE on SQLite takes the one write lock up front; lib/db's read-then-write paths that
      // span runs rely on that, so they take this one lock exclusively. A write scoped to one run
      // (lib/db/raw.ts writeTransaction with a run) takes it shared and locks its Run row instead:
      // writes to different runs proceed together, and an exclusive writer still excludes them all.
      const lock = nested
        ? ""
        : mode === "immediate"
          ? `SELECT pg_advisory_xact_lock(${WRITE_LOCK})`
          : mode === "shared"
            ? `SELECT pg_advisory_xact_lock_shared(${WRITE_LOCK})`
            : "";
      this.depth++;
      try {
        // one round trip (each costs ~0.3 ms here); inside the try: a lock that times out
        // (lock_timeout) rolls the transaction back too
        this.exec([nested ? `SAVEPOINT ${sp}` : "BEGIN", lock, prologue].filter(Boolean).join("; "));
        const out = fn(...args);
        this.depth--;
        this.exec(nested ? `RELEASE SAVEPOINT ${sp}` : "COMMIT");
        if (!nested) this.heldLocks.clear();
        return out;
      } catch (e) {
        this.depth--;
        if (!nested) this.heldLocks.clear();
        try {
          this.exec(nested ? `ROLLBACK TO SAVEPOINT ${sp}` : "ROLLBACK");
        } catch {
          /* the connection is broken; the original error says why */
        }
        throw e;
      }
    };
    const f = (...args: A) => run("deferred", args);
    return Object.assign(f, {
      deferred: (...args: A) => run("deferred", args),
      immediate: (...args: A) => run("immediate", args),
      exclusive: (...args: A) => run("immediate", args),
      shared: (...args: A) => run("shared", args),
    });
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  /** SQLite pragmas have no PostgreSQL meaning; callers only set connection options with them. */
  pragma(_source?: string): undefined {
    return undefined;
  }

  close(): this {
    if (this.open) {
      this.pq.finish();
      this.open = false;
      // finish() asks libuv to close the connection's poll handle, which lives inside the addon's
      // object, and libuv completes the close on a later turn of the event loop. If the object were
      // collected before that, libuv would touch freed memory (it aborted a test run with
      // "uv__finish_close: Assertion ... failed"): keep it reachable for a moment.
      const pq = this.pq;
      closing.add(pq);
      setTimeout(() => closing.delete(pq), 1000).unref();
    }
    return this;
  }

  /** Executes one statement and returns the result's rows (the caller clears the result). */
  execute(sql: string, params: unknown[]): Libpq {
    if (!this.open) throw new TypeError("The database connection is not open");
    const { text, names } = toPgPlaceholders(sql);
    let values = flatten(params);
    if (names) {
      const obj = (values[0] ?? {}) as Record<string, unknown>;
      values = names.map((k) => {
        if (!(k in obj)) throw new PgError(`missing named parameter @${k}`, undefined, sql);
        return obj[k];
      });
    }
    const bound = values.map((v) => encode(v, sql));
    if (sql.startsWith(PLAN_PER_CALL)) {
      this.pq.execParams(text, bound);
      this.check(sql);
      return this.pq;
    }
    // Statements are prepared once per connection, as SQLite's are compiled once (lib/db/sqlite.ts); the least
    // recently used are deallocated past MAX_PREPARED (texts built per call, e.g. IN lists, vary).
    let name = this.statementNames.get(text);
    if (name) {
      this.statementNames.delete(text);
      this.statementNames.set(text, name); // most recently used last
    } else {
      if (this.statementNames.size >= MAX_PREPARED) {
        const [oldText, oldName] = this.statementNames.entries().next().value as [string, string];
        this.statementNames.delete(oldText);
        this.exec(`DEALLOCATE ${oldName}`);
      }
      name = `tl_${this.preparedCount++}`;
      this.pq.prepare(name, text, bound.length);
      this.check(sql);
      this.pq.clear();
      this.statementNames.set(text, name);
    }
    this.pq.execPrepared(name, bound);
    this.check(sql);
    return this.pq;
  }

  private check(sql: string): void {
    const status = this.pq.resultStatus();
    if (status === "PGRES_COMMAND_OK" || status === "PGRES_TUPLES_OK") return;
    const fields = this.pq.resultErrorFields() ?? {};
    const msg = this.pq.resultErrorMessage() || this.pq.errorMessage() || status;
    this.pq.clear();
    throw new PgError(`${msg.trim()} (in: ${sql.replace(/\s+/g, " ").slice(0, 200)})`, fields.sqlState, sql);
  }
}

export class PgStatement implements RawStatement {
  private plucked = false;
  private asArrays = false;

  constructor(
    private db: PgSyncDb,
    readonly source: string,
  ) {}

  pluck(toggle = true): this {
    this.plucked = toggle;
    if (toggle) this.asArrays = false;
    return this;
  }

  raw(toggle = true): this {
    this.asArrays = toggle;
    if (toggle) this.plucked = false;
    return this;
  }

  run(...params: unknown[]): { changes: number; lastInsertRowid: number } {
    const pq = this.db.execute(this.source, params);
    const changes = Number(pq.cmdTuples() || 0);
    pq.clear();
    return { changes, lastInsertRowid: 0 };
  }

  get(...params: unknown[]): unknown {
    return this.rows(params, 1)[0];
  }

  all(...params: unknown[]): unknown[] {
    return this.rows(params, Infinity);
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    return this.rows(params, Infinity)[Symbol.iterator]();
  }

  private rows(params: unknown[], limit: number): unknown[] {
    const pq = this.db.execute(this.source, params);
    try {
      const n = Math.min(pq.ntuples(), limit);
      const nf = pq.nfields();
      const names: string[] = [];
      const decoders: ((text: string) => unknown)[] = [];
      for (let c = 0; c < nf; c++) {
        names.push(pq.fname(c));
        decoders.push(decoder(pq.ftype(c)));
      }
      // libpq gives NULL as "": only an empty value needs the second call into the addon to tell them apart
      const value = (r: number, c: number) => {
        const text = pq.getvalue(r, c);
        return text === "" && pq.getisnull(r, c) ? null : decoders[c](text);
      };
      const out: unknown[] = new Array(n);
      for (let r = 0; r < n; r++) {
        if (this.plucked) out[r] = value(r, 0);
        else if (this.asArrays) {
          const row = new Array(nf);
          for (let c = 0; c < nf; c++) row[c] = value(r, c);
          out[r] = row;
        } else {
          const row: Record<string, unknown> = {};
          for (let c = 0; c < nf; c++) row[names[c]] = value(r, c);
          out[r] = row;
        }
      }
      return out;
    } finally {
      pq.clear();
    }
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}
