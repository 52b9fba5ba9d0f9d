// Where SQLite and PostgreSQL spell SQL differently, both spellings side by side. Every statement
// of lib/db that differs between the stores takes its fragment from `dialect(db)`; nothing else
// asks which store it is on. The fragments are SQL text with `?` placeholders (never values).
import type { ConfigClause } from "../schemas/runs";
import { insertRows, isPostgresDb, openRawDb, type RawDb } from "./raw";
import { PLAN_PER_CALL } from "./pg-sync";
import { isPostgres } from "./url";

export interface Dialect {
  readonly name: "sqlite" | "postgresql";
  /** A JSON column's value at a constant path as text (`column` is SQL, `path` constant keys). */
  jsonText(column: string, path: string[]): string;
  /** Case-insensitive LIKE (SQLite's LIKE is, for ASCII). */
  readonly ilike: "LIKE" | "ILIKE";
  /**
   * A join whose loop order SQLite keeps as written (CROSS JOIN), so that it walks indexes in a
   * page's order and stops after the page; PostgreSQL has no CROSS JOIN ... ON and plans joins itself.
   */
  readonly orderedJoin: "CROSS JOIN" | "JOIN";
  /** `column` (a JSON array) holds the text `?`. */
  jsonArrayHas(column: string): string;
  /** The distinct text elements of a JSON array column over a table's rows (e.g. every run tag). */
  distinctArrayValues(table: string, column: string, limit: number): string;
  /** The dotted paths of scalar values in the config of the `recent` newest runs. */
  configKeys(recent: number, limit: number): string;
  /** Appends one config clause on r."config" to `where`/`args`. */
  configClause(c: ConfigClause, where: string[], args: unknown[]): void;
  /**
   * Per group of `ratio` rows of `table` (grouped by `groupCol` / ratio, from `groupCol` >= the
   * second argument on), the step, value and wall time of the row holding the group's minimum and
   * of the one holding its maximum (first such row on ties), as [isMax 0/1, step, value, wall time]
   * rows: the minima in group order and the maxima in group order; args follow `bucketArgs`. One
   * statement: on PostgreSQL each is a round trip. SQLite returns the bare columns of the row
   * holding MIN/MAX (documented behaviour); PostgreSQL says the same with DISTINCT ON.
   */
  bucketExtremes(s: BucketColumns): string;
  bucketArgs(seriesId: number, from: number): unknown[];
  /**
   * insertRows with each column's PostgreSQL type: rows as one flat array, `types.length` values a
   * row. SQLite: multi-row VALUES (insertRows). PostgreSQL: one statement whatever the row count,
   * each column one array parameter (unnest); 200-row VALUES statements cost a round trip and a
   * parse of 800 parameters each (1,000 metric points: 5.7 ms of a 9.8 ms write).
   */
  insertTyped(db: RawDb, head: string, types: string[], values: (number | string | null)[], tail?: string): void;
  /** `column IN` a list of texts bound as one parameter (`textList` makes it): one statement shape for any list. */
  inTextList(column: string): string;
  textList(values: string[]): string;
  /** The trajectory search's word index ("TrajectoryText"; lib/db/trajectory-search.ts). */
  readonly wordIndex: {
    /** INSERT head; a row's VALUES entry is `tuple` with (key, observation words, action words), words space-separated */
    insert: string;
    tuple: string;
    /** keys of trajectories holding every word (each in one of `fields`) */
    match(words: string[], fields: ("obs" | "act")[]): { sql: string; args: unknown[] };
  };
  /** Whether a claim can skip rows other transactions hold (FOR UPDATE SKIP LOCKED). */
  readonly skipLocked: boolean;
  /** Bytes a table takes with its indexes (a benchmark's figure). */
  tableBytes(db: RawDb, prefix: string): number;
}

/** The columns a chart's buckets read: the grouped rows' table, each side's [step, value, wall time] columns. */
export interface BucketColumns {
  table: string;
  groupCol: string;
  /** rows per group: an integer computed by lib/db (never input), written into the SQL */
  ratio: number;
  /** extra condition on the rows (the rollup level) */
  levelCond: string;
  min: [string, string, string];
  max: [string, string, string];
}
const groupOf = (s: BucketColumns) => `"${s.groupCol}" / ${Math.trunc(s.ratio)}`;

/** `$."a"."b"` JSON path of a dotted config path (each key quoted, so any key name is safe). */
const jsonPath = (path: string[]) => "$" + path.map((k) => `."${k.replace(/"/g, '""')}"`).join("");

/** LIKE pattern for "contains `v`", with LIKE's own characters escaped (ESCAPE '\'). */
export const likePattern = (v: unknown) => `%${String(v).replace(/[\\%_]/g, (ch) => "\\" + ch)}%`;

export const SQLITE: Dialect = {
  name: "sqlite",
  jsonText: (column, path) => `json_extract(${column}, '${jsonPath(path).replace(/'/g, "''")}')`,
  ilike: "LIKE",
  orderedJoin: "CROSS JOIN",
  jsonArrayHas: (column) => `EXISTS (SELECT 1 FROM json_each(${column}) WHERE json_each."value" = ?)`,
  distinctArrayValues: (table, column, limit) => `SELECT DISTINCT j."value" FROM "${table}" r, json_each(r."${column}") j ORDER BY 1 LIMIT ${limit}`,
  configKeys: (recent, limit) =>
    `SELECT DISTINCT substr(j."fullkey", 3) FROM (SELECT "config" FROM "Run" ORDER BY "createdAt" DESC LIMIT ${recent}) r, json_tree(r."config") j
     WHERE j."type" NOT IN ('object', 'array') AND instr(j."fullkey", '[') = 0 ORDER BY 1 LIMIT ${limit}`,
  // json_extract gives SQL values (JSON true is 1)
  configClause(c, where, args) {
    const x = `json_extract(r."config", ?)`;
    const v = typeof c.value === "boolean" ? Number(c.value) : c.value;
    if (c.op === "~") where.push(`CAST(${x} AS TEXT) LIKE ? ESCAPE '\\'`), args.push(jsonPath(c.path), likePattern(v));
    else if (c.op === "=") where.push(`${x} IS ?`), args.push(jsonPath(c.path), v);
    else if (c.op === "!=") where.push(`${x} IS NOT ?`), args.push(jsonPath(c.path), v);
    else where.push(`${x} ${c.op} ?`), args.push(jsonPath(c.path), v);
  },
  bucketExtremes: (s) => {
    const side = (isMax: 0 | 1) => {
      const [step, value, wall] = isMax ? s.max : s.min;
      return `SELECT ${isMax}, "${step}", ${isMax ? "MAX" : "MIN"}("${value}"), "${wall}" FROM "${s.table}" WHERE "seriesId" = ? ${s.levelCond} AND "${s.groupCol}" >= ? GROUP BY ${groupOf(s)}`;
    };
    // each side comes out in group order (its GROUP BY walks the primary key), so no sort of the whole
    return `${side(0)} UNION ALL ${side(1)}`;
  },
  bucketArgs: (seriesId, from) => [seriesId, from, seriesId, from],
  insertTyped: (db, head, types, values, tail = "") => insertRows(db, head, types.length, values, tail),
  inTextList: (column) => `${column} IN (SELECT "value" FROM json_each(?))`,
  textList: (values) => JSON.stringify(values),
  wordIndex: {
    // an FTS5 table: contentless, detail=column; a column filter per query
    insert: `INSERT INTO "TrajectoryText" ("rowid", "obs", "act")`,
    tuple: "(?,?,?)",
    match: (words, fields) => ({
      sql: `SELECT "rowid" FROM "TrajectoryText" WHERE "TrajectoryText" MATCH ?`,
      args: [`{${fields.join(" ")}} : (${words.map((w) => `"${w}"`).join(" AND ")})`],
    }),
  },
  skipLocked: false,
  tableBytes(db, prefix) {
    const rows = db.prepare(`SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name`).all() as { name: string; bytes: number }[];
    return rows.filter((r) => r.name.startsWith(prefix)).reduce((s, r) => s + r.bytes, 0);
  },
};

export const POSTGRESQL: Dialect = {
  name: "postgresql",
  jsonText: (column, path) => `${column} #>> '{${path.map((k) => `"${k.replace(/["\\]/g, (ch) => "\\" + ch).replace(/'/g, "''")}"`).join(",")}}'`,
  ilike: "ILIKE",
  orderedJoin: "JOIN",
  jsonArrayHas: (column) => `${column} @> jsonb_build_array(CAST(? AS text))`,
  distinctArrayValues: (table, column, limit) => `SELECT DISTINCT j FROM "${table}" r, jsonb_array_elements_text(r."${column}") j ORDER BY 1 LIMIT ${limit}`,
  configKeys: (recent, limit) =>
    `WITH RECURSIVE t("path", "v") AS (
       SELECT e."key", e."value" FROM (SELECT "config" FROM "Run" ORDER BY "createdAt" DESC LIMIT ${recent}) r,
         jsonb_each(CASE WHEN jsonb_typeof(r."config") = 'object' THEN r."config" ELSE '{}'::jsonb END) e
       UNION ALL
       SELECT t."path" || '.' || e."key", e."value" FROM t, jsonb_each(t."v") e WHERE jsonb_typeof(t."v") = 'object')
     SELECT DISTINCT "path" FROM t WHERE jsonb_typeof("v") NOT IN ('object', 'array') ORDER BY 1 LIMIT ${limit}`,
  // jsonb: equality compares JSON values (1 = 1.0, true is not 1), order comparisons apply to numbers
  // only, `~` matches the value's text case-insensitively as LIKE does on SQLite; a missing path or
  // JSON null equals null
  configClause(c, where, args) {
    const x = `(r."config" #> ARRAY[${c.path.map(() => "CAST(? AS text)").join(",")}])`;
    const v = c.value;
    const json =
      v === null
        ? `'null'::jsonb`
        : typeof v === "number"
          ? "to_jsonb(CAST(? AS float8))"
          : typeof v === "boolean"
            ? "to_jsonb(CAST(? AS boolean))"
            : "to_jsonb(CAST(? AS text))";
    const eq = v === null ? `COALESCE(${x} = 'null'::jsonb, true)` : `COALESCE(${x} = ${json}, false)`;
    const bind = v === null ? [] : [v];
    if (c.op === "~") where.push(`(${x} #>> '{}') ILIKE ? ESCAPE '\\'`), args.push(...c.path, likePattern(v));
    else if (c.op === "=") where.push(eq), args.push(...c.path, ...bind);
    else if (c.op === "!=") where.push(`NOT ${eq}`), args.push(...c.path, ...bind);
    else
      where.push(`(CASE WHEN jsonb_typeof(${x}) = 'number' THEN CAST(${x} #>> '{}' AS float8) END) ${c.op} CAST(? AS float8)`),
        args.push(...c.path, ...c.path, v);
  },
  bucketExtremes: (s) => {
    const side = (isMax: 0 | 1) => {
      const [step, value, wall] = isMax ? s.max : s.min;
      return `(SELECT DISTINCT ON (${groupOf(s)}) ${groupOf(s)} AS "g", ${isMax} AS "isMax", "${step}" AS "step", "${value}" AS "value", "${wall}" AS "wall"
               FROM "${s.table}" WHERE "seriesId" = ? ${s.levelCond} AND "${s.groupCol}" >= ?
               ORDER BY ${groupOf(s)}, "${value}" ${isMax ? "DESC" : "ASC"}, "${s.groupCol}")`;
    };
    return `${PLAN_PER_CALL} SELECT "isMax", "step", "value", "wall" FROM (${side(0)} UNION ALL ${side(1)}) AS x ORDER BY "g", "isMax"`;
  },
  bucketArgs: (seriesId, from) => [seriesId, from, seriesId, from],
  insertTyped(db, head, types, values, tail = "") {
    if (!values.length) return;
    const columns = types.map(() => [] as (number | string | null)[]);
    for (let i = 0; i < values.length; i++) columns[i % types.length].push(values[i]);
    db.prepare(`${head} SELECT * FROM unnest(${types.map((t) => `CAST(? AS ${t}[])`).join(", ")}) ${tail}`).run(...columns.map(arrayLiteral));
  },
  inTextList: (column) => `${column} = ANY(CAST(? AS text[]))`,
  textList: (values) => arrayLiteral(values),
  wordIndex: {
    // tsvector columns made with array_to_tsvector (our words as-is: no parser); GIN bitmap scans ANDed and ORed
    insert: `INSERT INTO "TrajectoryText" ("key", "obs", "act")`,
    tuple: "(?, array_to_tsvector(string_to_array(?, ' ')), array_to_tsvector(string_to_array(?, ' ')))",
    match: (words, fields) => ({
      sql: `SELECT "key" FROM "TrajectoryText" WHERE ${words.map(() => `(${fields.map((f) => `"${f}" @@ ?::tsquery`).join(" OR ")})`).join(" AND ")}`,
      args: words.flatMap((w) => fields.map(() => `'${w}'`)),
    }),
  },
  skipLocked: true,
  tableBytes(db, prefix) {
    const names = db
      .prepare(`SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE ? ESCAPE '\\'`)
      .pluck()
      .all(`${prefix.replace(/[\\%_]/g, (ch) => "\\" + ch)}%`) as string[];
    return names.reduce((s, n) => s + Number(db.prepare(`SELECT pg_total_relation_size(quote_ident(?)::regclass)`).pluck().get(n)), 0);
  },
};

/**
 * A PostgreSQL array literal: numbers as JavaScript writes them (NaN and ±Infinity included, as
 * float8 reads them), null as NULL, texts double-quoted with their backslashes and quotes escaped.
 */
function arrayLiteral(values: (number | string | null)[]): string {
  return `{${values.map((v) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`)).join(",")}}`;
}

/** The dialect of a connection's store. */
export const dialect = (db: RawDb): Dialect => (isPostgresDb(db) ? POSTGRESQL : SQLITE);

// ---- Bulk loads and size figures (the benchmarks' lib/db/bulk-load.ts): a loader of rows (SQLite:
// multi-row INSERTs in one transaction a write; PostgreSQL: COPY, the fastest way in), the
// database's and tables' bytes, and what follows a bulk load.

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
    const { default: pg } = await import("pg");
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
