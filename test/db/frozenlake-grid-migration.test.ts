// FrozenLake's observation gained the player's neighbours, then the cells two moves away (both on
// by default); each migration writes its field as false into the config of every FrozenLake run
// and job made before it, so a resumed run or an evaluation of its checkpoints shows the model the
// observation it learned on. Runs that say already, other environments and imported runs (their
// trainers' own configs) are left as they are.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../helpers/postgres";
import { migrationSql, migrationsBefore, usePostgresClient } from "../helpers/migrations";

const MIGRATIONS: [migration: string, field: string][] = [
  ["20261126024500_frozenlake_existing_runs_keep_bare_grid", "neighbours"],
  ["20261126120000_frozenlake_existing_runs_keep_one_ring", "farNeighbours"],
];
const T = "2026-11-26T00:00:00.000Z";

/** The runs stored before the migration, and what their configs must be after it. */
function cases(field: string) {
  const runs: [id: string, jobKind: string | null, config: object][] = [
    ["train", "train", { envId: "frozenlake", envConfig: { size: 6, maxTurns: 20 }, lr: 0.0003 }],
    ["baseline", "baseline", { envId: "frozenlake", envConfig: { size: 4 } }],
    ["said", "train", { envId: "frozenlake", envConfig: { size: 6, [field]: true } }],
    ["sokoban", "train", { envId: "sokoban", envConfig: { size: 6 } }],
    ["imported", null, { envId: "frozenlake", envConfig: { size: 6 } }],
  ];
  const want: Record<string, object> = {
    train: { envId: "frozenlake", envConfig: { size: 6, maxTurns: 20, [field]: false }, lr: 0.0003 },
    baseline: { envId: "frozenlake", envConfig: { size: 4, [field]: false } },
    said: runs[2][2],
    sokoban: runs[3][2],
    imported: runs[4][2],
  };
  return { runs, want };
}

async function seed(runs: ReturnType<typeof cases>["runs"], exec: (sql: string, params: unknown[]) => Promise<unknown>, ph: (i: number) => string) {
  await exec(`INSERT INTO "Project" ("id","name","updatedAt") VALUES ('p','p','${T}')`, []);
  for (const [id, jobKind, config] of runs) {
    await exec(`INSERT INTO "Run" ("id","projectId","name","kind","jobKind","config","updatedAt") VALUES (${[1, 2, 3, 4, 5, 6, 7].map(ph).join(",")})`, [
      id,
      "p",
      id,
      jobKind ? "train" : "imported",
      jobKind,
      JSON.stringify(config),
      T,
    ]);
    if (jobKind)
      await exec(`INSERT INTO "Job" ("id","runId","kind","payload","updatedAt") VALUES (${[1, 2, 3, 4, 5].map(ph).join(",")})`, [
        `job-${id}`,
        id,
        jobKind,
        JSON.stringify(config),
        T,
      ]);
  }
}

function check(want: Record<string, object>, runs: [string, string | object][], jobs: [string, string | object][]) {
  const parse = (v: string | object) => (typeof v === "string" ? JSON.parse(v) : v);
  expect(Object.fromEntries(runs.map(([id, c]) => [id, parse(c)]))).toEqual(want);
  expect(Object.fromEntries(jobs.map(([id, c]) => [id, parse(c)]))).toEqual(
    Object.fromEntries(
      Object.entries(want)
        .filter(([k]) => k !== "imported")
        .map(([k, v]) => [`job-${k}`, v]),
    ),
  );
}

describe.each(MIGRATIONS)("migration %s", (migration, field) => {
  const { runs, want } = cases(field);
  it(`on SQLite writes ${field}: false into FrozenLake runs and jobs made before, and leaves the rest`, async () => {
    const db = new Database(":memory:");
    for (const sql of migrationsBefore("sqlite", migration)) db.exec(sql);
    await seed(
      runs,
      async (sql, params) => db.prepare(sql).run(params),
      () => "?",
    );
    db.exec(migrationSql("sqlite", migration));
    check(
      want,
      db.prepare(`SELECT "id", "config" FROM "Run"`).raw().all() as [string, string][],
      db.prepare(`SELECT "id", "payload" FROM "Job"`).raw().all() as [string, string][],
    );
    db.close();
  });

  const skip = postgresUnavailable();
  describe.skipIf(skip)("on PostgreSQL", () => {
    const pgClient = usePostgresClient(`frozenlake_${field.toLowerCase()}_migration`);
    it(`writes ${field}: false into FrozenLake runs and jobs made before, and leaves the rest`, async () => {
      const client = pgClient();
      for (const sql of migrationsBefore("postgresql", migration)) await client.query(sql);
      await seed(
        runs,
        (sql, params) => client.query(sql, params),
        (i) => `$${i}`,
      );
      await client.query(migrationSql("postgresql", migration));
      check(
        want,
        (await client.query({ text: `SELECT "id", "config" FROM "Run"`, rowMode: "array" })).rows as [string, object][],
        (await client.query({ text: `SELECT "id", "payload" FROM "Job"`, rowMode: "array" })).rows as [string, object][],
      );
    });
  });
});
