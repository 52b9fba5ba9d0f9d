// Migration 20261125220822_trajectory_packed_turns moves turns from one row each into their
// trajectory's row (lib/db/trajectory-pack.ts). A database written before it must keep every turn:
// the migration's SQL is run on a database at the previous migration holding two trajectories
// (texts with quotes and newlines, info with and without credit inputs, anchors, nulls, token
// BLOBs on some turns), on SQLite and (where installed) on PostgreSQL, and the packed columns are
// read back through the app's own decoder.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../helpers/postgres";
import { migrationSql, migrationsBefore, usePostgresClient } from "../helpers/migrations";
import { encodeTokenData, decodeTokenData } from "@/lib/db/token-data";
import { unpackTurnColumns, unpackTurns } from "@/lib/db/trajectory-pack";

const MIGRATION = "20261125220822_trajectory_packed_turns";

const T = "2026-11-25T00:00:00.000Z";
const tokens = encodeTokenData({ ids: [5, -1, 70000], texts: ["go", " ", "wé"], logprobs: [-0.5, -0.25, -1], advantages: null, entropies: [1.5, 0.5, 1] });
// trajectory a: three turns (written out of index order, second run's seq numbering), b: one turn
const TURNS: unknown[][] = [
  ["r1", 7, "a", 2, 'third "quoted"\nline', "stop", 1.5, true, true, "s2", null, 4, -0.75, null, 0.1 + 0.2, '{"value":0.25,"view":{"kind":"grid"}}', null],
  ["r1", 5, "a", 0, "first", "go north", 0, true, false, "s0", 1, 3, null, 0.5, -1.25, null, tokens],
  ["r1", 6, "a", 1, "second", "", -0.1, false, false, null, null, null, null, null, null, '{"note":"x"}', null],
  ["r1", 8, "b", 0, "only", "look", 2, true, true, "s0", null, null, null, null, null, null, tokens],
];

async function seed(exec: (sql: string, params?: unknown[]) => Promise<unknown>, ph: (i: number) => string) {
  await exec(`INSERT INTO "Project" ("id","name","updatedAt") VALUES ('p','p','${T}')`);
  await exec(`INSERT INTO "Run" ("id","projectId","name","kind","config","updatedAt") VALUES ('r1','p','a','train','{}','${T}')`);
  await exec(`INSERT INTO "RolloutStep" ("id","runId","step","createdAt") VALUES ('s','r1',0,'${T}')`);
  await exec(`INSERT INTO "RolloutGroup" ("id","runId","stepId","uid","envId","taskSeed") VALUES ('g','r1','s','u','sokoban',0)`);
  await exec(
    `INSERT INTO "Trajectory" ("id","runId","groupId","index","reward","success","length","truncated") VALUES ('a','r1','g',0,1.4,${ph(1)},3,${ph(2)}), ('b','r1','g',1,2,${ph(3)},1,${ph(4)})`,
    [true, false, true, false],
  );
  const cols = `"runId","seq","trajectoryId","index","observation","action","reward","valid","done","anchor","agent","tokenCount","logprob","entropy","advantage","info","tokenData"`;
  for (const row of TURNS) await exec(`INSERT INTO "Turn" (${cols}) VALUES (${row.map((_, i) => ph(i + 1)).join(",")})`, row);
}

type Row = [string, number, number, Uint8Array, Uint8Array, Uint8Array | null];
function check(rows: Row[]) {
  expect(rows.map((r) => r[0])).toEqual(["a", "b"]);
  const a = unpackTurns(...rows[0]);
  const b = unpackTurns(...rows[1]);
  expect(rows.map((r) => r[1])).toEqual([5, 8]); // firstSeq: the trajectory's first turn
  expect(
    a.map((u) => [
      u.seq,
      u.index,
      u.observation,
      u.action,
      u.reward,
      u.valid,
      u.done,
      u.anchor,
      u.agent,
      u.tokenCount,
      u.logprob,
      u.entropy,
      u.advantage,
      u.info,
    ]),
  ).toEqual([
    [5, 0, "first", "go north", 0, true, false, "s0", 1, 3, null, 0.5, -1.25, null],
    [6, 1, "second", "", -0.1, false, false, null, null, null, null, null, null, { note: "x" }],
    [7, 2, 'third "quoted"\nline', "stop", 1.5, true, true, "s2", null, 4, -0.75, null, 0.1 + 0.2, { value: 0.25, view: { kind: "grid" } }],
  ]);
  expect(a.map((u) => u.tokens)).toEqual([decodeTokenData(tokens), null, null]);
  expect(b.map((u) => [u.seq, u.observation, u.tokens])).toEqual([[8, "only", decodeTokenData(tokens)]]);
  // credit reads info's credit inputs from turnData
  expect(unpackTurnColumns(rows[0][3]).creditInfo[2]).toMatchObject({ value: 0.25 });
}

const READ = `SELECT "id","firstSeq","length","turnData","turnTexts","turnTokens" FROM "Trajectory" ORDER BY "id"`;

describe("packed turns migration", () => {
  it("on SQLite carries every turn into its trajectory's row, exactly", async () => {
    const db = new Database(":memory:");
    for (const sql of migrationsBefore("sqlite", MIGRATION)) db.exec(sql);
    await seed(
      async (sql, params = []) => db.prepare(sql).run(params.map((v) => (typeof v === "boolean" ? (v ? 1 : 0) : v))),
      () => "?",
    );
    db.exec(migrationSql("sqlite", MIGRATION));
    check(db.prepare(READ).raw().all() as Row[]);
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'Turn'`).get()).toBeUndefined();
    db.close();
  });

  const skip = postgresUnavailable();
  describe.skipIf(skip)("on PostgreSQL", () => {
    const pgClient = usePostgresClient("packed_turns_migration");

    it("carries every turn into its trajectory's row, exactly", async () => {
      const client = pgClient();
      for (const sql of migrationsBefore("postgresql", MIGRATION)) await client.query(sql);
      await seed(
        (sql, params) => client.query(sql, params),
        (i) => `$${i}`,
      );
      await client.query(migrationSql("postgresql", MIGRATION));
      check((await client.query({ text: READ, rowMode: "array" })).rows as Row[]);
    });
  });
});
