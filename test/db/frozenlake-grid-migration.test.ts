// FrozenLake's observation gained the player's neighbours (on by default); the migration writes
// `neighbours: false` into the config of every FrozenLake run and job made before, so a resumed
// run or an evaluation of its checkpoints plays the bare grid its model learned on. Runs that say
// already, other environments and imported runs (their trainers' own configs) are left as they are.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../helpers/postgres";
import { migrationSql, migrationsBefore, usePostgresClient } from "../helpers/migrations";

const MIGRATION = "20261126024500_frozenlake_existing_runs_keep_bare_grid";
const T = "2026-11-26T00:00:00.000Z";
const RUNS: [id: string, jobKind: string | null, config: object][] = [
  ["train", "train", { envId: "frozenlake", envConfig: { size: 6, maxTurns: 20 }, lr: 0.0003 }],
  ["baseline", "baseline", { envId: "frozenlake", envConfig: { size: 4 } }],
  ["said", "train", { envId: "frozenlake", envConfig: { size: 6, neighbours: true } }],
  ["sokoban", "train", { envId: "sokoban", envConfig: { size: 6 } }],
  ["imported", null, { envId: "frozenlake", envConfig: { size: 6 } }],
];
const WANT: Record<string, object> = {
  train: { envId: "frozenlake", envConfig: { size: 6, maxTurns: 20, neighbours: false }, lr: 0.0003 },
  baseline: { envId: "frozenlake", envConfig: { size: 4, neighbours: false } },
  said: RUNS[2][2],
  sokoban: RUNS[3][2],
  imported: RUNS[4][2],
};

async function seed(exec: (sql: string, params: unknown[]) => Promise<unknown>, ph: (i: number) => string) {
  await exec(`INSERT INTO "Project" ("id","name","updatedAt") VALUES ('p','p','${T}')`, []);
  for (const [id, jobKind, config] of RUNS) {
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

function check(runs: [string, string | object][], jobs: [string, string | object][]) {
  const parse = (v: string | object) => (typeof v === "string" ? JSON.parse(v) : v);
  expect(Object.fromEntries(runs.map(([id, c]) => [id, parse(c)]))).toEqual(WANT);
  expect(Object.fromEntries(jobs.map(([id, c]) => [id, parse(c)]))).toEqual(
    Object.fromEntries(
      Object.entries(WANT)
        .filter(([k]) => k !== "imported")
        .map(([k, v]) => [`job-${k}`, v]),
    ),
  );
}

describe(`migration ${MIGRATION}`, () => {
  it("on SQLite keeps the bare grid for FrozenLake runs and jobs made before, and leaves the rest", async () => {
    const db = new Database(":memory:");
    for (const sql of migrationsBefore("sqlite", MIGRATION)) db.exec(sql);
    await seed(
      async (sql, params) => db.prepare(sql).run(params),
      () => "?",
    );
    db.exec(migrationSql("sqlite", MIGRATION));
    check(
      db.prepare(`SELECT "id", "config" FROM "Run"`).raw().all() as [string, string][],
      db.prepare(`SELECT "id", "payload" FROM "Job"`).raw().all() as [string, string][],
    );
    db.close();
  });

  const skip = postgresUnavailable();
  describe.skipIf(skip)("on PostgreSQL", () => {
    const pgClient = usePostgresClient("frozenlake_grid_migration");
    it("keeps the bare grid for FrozenLake runs and jobs made before, and leaves the rest", async () => {
      const client = pgClient();
      for (const sql of migrationsBefore("postgresql", MIGRATION)) await client.query(sql);
      await seed(
        (sql, params) => client.query(sql, params),
        (i) => `$${i}`,
      );
      await client.query(migrationSql("postgresql", MIGRATION));
      check(
        (await client.query({ text: `SELECT "id", "config" FROM "Run"`, rowMode: "array" })).rows as [string, object][],
        (await client.query({ text: `SELECT "id", "payload" FROM "Job"`, rowMode: "array" })).rows as [string, object][],
      );
    });
  });
});
