// Migration 20261126171220_metric_rollup_wall_times stores, in each MetricRollup bucket, the wall
// times of its min and max points. Buckets written before it must take them from those points'
// Metric rows, whichever of the bucket's points they are: the migration's SQL is run on a database
// at the previous migration that holds metrics, on SQLite and (where installed) on PostgreSQL.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../helpers/postgres";
import { migrationSql, migrationsBefore, usePostgresClient } from "../helpers/migrations";

const MIGRATION = "20261126171220_metric_rollup_wall_times";

// Series 1: min at step 2, max at step 0 (level 16), and a level-256 bucket with the same points.
// Series 2: one point, min and max at the same step.
const OLD_ROWS = `
  INSERT INTO "Project" ("id","name","updatedAt") VALUES ('p','p','2026-11-26T00:00:00.000Z');
  INSERT INTO "Run" ("id","projectId","name","kind","config","updatedAt") VALUES ('r1','p','a','train','{}','2026-11-26T00:00:00.000Z');
  INSERT INTO "MetricSeries" ("id","runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue") VALUES
    (1,'r1','loss',3,0,2,0.5,0.5,2.5), (2,'r1','reward',1,5,5,1,1,1);
  INSERT INTO "Metric" ("seriesId","step","value","wallTime") VALUES
    (1,0,2.5,1000.25), (1,1,1.5,1001.5), (1,2,0.5,1002.75), (2,5,1,2000.125);
  INSERT INTO "MetricRollup" ("seriesId","level","bucket","count","minStep","minValue","maxStep","maxValue","firstStep","lastStep","lastValue") VALUES
    (1,16,0,3,2,0.5,0,2.5,0,2,0.5), (1,256,0,3,2,0.5,0,2.5,0,2,0.5), (2,16,0,1,5,1,5,1,5,5,1);`;

const BUCKETS = `SELECT "seriesId", "level", "bucket", "minStep", "minWallTime", "maxStep", "maxWallTime", "count" FROM "MetricRollup" ORDER BY 1, 2, 3`;
const WANT = [
  [1, 16, 0, 2, 1002.75, 0, 1000.25, 3],
  [1, 256, 0, 2, 1002.75, 0, 1000.25, 3],
  [2, 16, 0, 5, 2000.125, 5, 2000.125, 1],
];

describe("rollup wall times migration", () => {
  it("on SQLite gives each bucket the wall times of its min and max points", () => {
    const db = new Database(":memory:");
    for (const sql of migrationsBefore("sqlite", MIGRATION)) db.exec(sql);
    db.exec(OLD_ROWS);
    db.exec(migrationSql("sqlite", MIGRATION));
    expect(db.prepare(BUCKETS).raw().all()).toEqual(WANT);
    // still one B-tree per row
    expect(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'MetricRollup'`).pluck().get()).toMatch(/WITHOUT ROWID/);
    db.close();
  });

  const skip = postgresUnavailable();
  describe.skipIf(skip)("on PostgreSQL", () => {
    const pgClient = usePostgresClient("rollup_wall_times_migration");

    it("gives each bucket the wall times of its min and max points, and requires them from then on", async () => {
      const client = pgClient();
      for (const sql of migrationsBefore("postgresql", MIGRATION)) await client.query(sql);
      await client.query(OLD_ROWS);
      await client.query(migrationSql("postgresql", MIGRATION));
      expect((await client.query({ text: BUCKETS, rowMode: "array" })).rows).toEqual(WANT);
      await expect(
        client.query(
          `INSERT INTO "MetricRollup" ("seriesId","level","bucket","count","minStep","minValue","maxStep","maxValue","firstStep","lastStep","lastValue") VALUES (2,256,0,1,5,1,5,1,5,5,1)`,
        ),
      ).rejects.toThrow(/null value/);
    });
  });
});
