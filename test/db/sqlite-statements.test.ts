// SQLite's connection compiles each SQL text once (lib/db/sqlite.ts openSqliteCompiledOnce), as
// PostgreSQL's keeps one named statement per text: every handle of a text shares the compiled
// statement, yet each keeps its own row mode, and one still being iterated is never shared.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openSqliteCompiledOnce } from "@/lib/db/sqlite";

const dirs: string[] = [];
function open() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-sqlite-statements-"));
  dirs.push(dir);
  const db = openSqliteCompiledOnce(path.join(dir, "t.db"));
  db.exec(`CREATE TABLE t ("a" INTEGER, "b" TEXT)`);
  db.prepare(`INSERT INTO t VALUES (?, ?), (?, ?), (?, ?)`).run(1, "x", 2, "y", 3, "z");
  return db;
}

afterEach(() => {
  vi.restoreAllMocks();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("SQLite statements compiled once", () => {
  it("compiles a text once however often it is prepared", () => {
    const compile = vi.spyOn(Database.prototype, "prepare");
    const db = open();
    const before = compile.mock.calls.length;
    for (let i = 0; i < 50; i++) expect(db.prepare(`SELECT "a" FROM t WHERE "a" = ?`).pluck().get(2)).toBe(2);
    expect(compile.mock.calls.length - before).toBe(1);
    db.close();
  });

  it("keeps each handle's row mode, whichever ran last", () => {
    const db = open();
    const sql = `SELECT "a", "b" FROM t ORDER BY "a"`;
    const rows = db.prepare(sql);
    const arrays = db.prepare(sql).raw();
    const firsts = db.prepare(sql).pluck();
    for (let i = 0; i < 2; i++) {
      expect(rows.all()).toEqual([
        { a: 1, b: "x" },
        { a: 2, b: "y" },
        { a: 3, b: "z" },
      ]);
      expect(arrays.get()).toEqual([1, "x"]);
      expect(firsts.all()).toEqual([1, 2, 3]);
    }
    // turning one mode off leaves the other, as better-sqlite3 does
    expect(db.prepare(sql).raw().pluck(false).get()).toEqual([1, "x"]);
    expect(db.prepare(sql).pluck().raw(false).get()).toBe(1);
    expect(db.prepare(sql).raw().raw(false).get()).toEqual({ a: 1, b: "x" });
    db.close();
  });

  it("runs a text again while an iteration of it is still open, with a statement of its own", () => {
    const db = open();
    const sql = `SELECT "a" FROM t WHERE "a" >= ? ORDER BY "a"`;
    const seen: [number, number[]][] = [];
    for (const a of db.prepare(sql).pluck().iterate(1) as Iterable<number>) seen.push([a, db.prepare(sql).pluck().all(a) as number[]]);
    expect(seen).toEqual([
      [1, [1, 2, 3]],
      [2, [2, 3]],
      [3, [3]],
    ]);
    db.close();
  });

  it("still throws an SQL error at prepare, naming it", () => {
    const db = open();
    expect(() => db.prepare(`SELEC "a" FROM t`)).toThrow(/syntax error/);
    expect(() => db.prepare(`SELECT "nope" FROM t`)).toThrow(/no such column/);
    db.close();
  });

  it("keeps at most 500 compiled texts, the least recently used dropped first", () => {
    const compile = vi.spyOn(Database.prototype, "prepare");
    const db = open();
    const text = (i: number) => `SELECT ${i} AS "n"`;
    for (let i = 0; i < 600; i++) db.prepare(text(i));
    const before = compile.mock.calls.length;
    db.prepare(text(599)).get(); // recent: still compiled
    expect(compile.mock.calls.length).toBe(before);
    expect(db.prepare(text(0)).pluck().get()).toBe(0); // dropped: compiled again
    expect(compile.mock.calls.length).toBe(before + 1);
    db.close();
  });
});
