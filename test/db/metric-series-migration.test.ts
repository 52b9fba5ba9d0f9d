// Migration 20261123174108_metric_series_ids re-keys Metric and MetricRollup by an integer series
// id. A database written before it must keep every point and bucket under the right series: the
// migration's SQL is run on a database at the previous migration that holds two runs' metrics,
// on SQLite and (where installed) on PostgreSQL.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../helpers/postgres";
import { migrationSql, migrationsBefore, usePostgresClient } from "../helpers/migrations";

const MIGRATION = "20261123174108_metric_series_ids";

// Two runs with the same keys (the old key's text is all that told their points apart), and a
// point of a run that has no series row (a run deleted before deleteRunMetrics existed).
const OLD_ROWS = `
  INSERT INTO "Project" ("id","name","updatedAt") VALUES ('p','p','2026-11-23T00:00:00.000Z');
  INSERT INTO "Run" ("id","projectId","name","kind","config","updatedAt") VALUES ('r1','p','a','train','{}','2026-11-23T00:00:00.000Z'), ('r2','p','b','train','{}','2026-11-23T00:00:00.000Z');
  INSERT INTO "Metric" ("runId","key","step","value","wallTime") VALUES
    ('r1','loss',0,1.5,100), ('r1','loss',1,1.25,101), ('r1','reward',0,0.5,100),
    ('r2','loss',0,9.5,200), ('r2','loss',7,8.5,207),
    ('gone','loss',0,3,300);
  INSERT INTO "MetricRollup" ("runId","key","level","bucket","count","minStep","minValue","maxStep","maxValue","firstStep","lastStep","lastValue") VALUES
    ('r1','loss',16,0,2,1,1.25,0,1.5,0,1,1.25), ('r2','loss',16,0,2,7,8.5,0,9.5,0,7,8.5);
  INSERT INTO "MetricSeries" ("runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue") VALUES
    ('r1','loss',2,0,1,1.25,1.25,1.5), ('r1','reward',1,0,0,0.5,0.5,0.5), ('r2','loss',2,0,7,8.5,8.5,9.5);`;

const POINTS = `SELECT s."runId", s."key", m."step", m."value", m."wallTime" FROM "Metric" m JOIN "MetricSeries" s ON s."id" = m."seriesId" ORDER BY 1, 2, 3`;
const BUCKETS = `SELECT s."runId", s."key", r."level", r."bucket", r."count", r."minStep", r."maxStep" FROM "MetricRollup" r JOIN "MetricSeries" s ON s."id" = r."seriesId" ORDER BY 1, 2`;
const WANT_POINTS = [
  ["r1", "loss", 0, 1.5, 100],
  ["r1", "loss", 1, 1.25, 101],
  ["r1", "reward", 0, 0.5, 100],
  ["r2", "loss", 0, 9.5, 200],
  ["r2", "loss", 7, 8.5, 207],
];
const WANT_BUCKETS = [
  ["r1", "loss", 16, 0, 2, 1, 0],
  ["r2", "loss", 16, 0, 2, 7, 0],
];

describe("metric series ids migration", () => {
  it("on SQLite keeps every point and bucket under its run's series, and drops points of no series", () => {
    const db = new Database(":memory:");
    for (const sql of migrationsBefore("sqlite", MIGRATION)) db.exec(sql);
    db.exec(OLD_ROWS);
    db.exec(migrationSql("sqlite", MIGRATION));
    expect(db.prepare(POINTS).raw().all()).toEqual(WANT_POINTS);
    expect(db.prepare(BUCKETS).raw().all()).toEqual(WANT_BUCKETS);
    expect(db.prepare(`SELECT COUNT(*) FROM "Metric"`).pluck().get()).toBe(5);
    // still one B-tree per row, and the (run, key) pair still unique
    expect(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'Metric'`).pluck().get()).toMatch(/WITHOUT ROWID/);
    expect(() =>
      db.exec(`INSERT INTO "MetricSeries" ("runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue") VALUES ('r1','loss',0,0,0,0,0,0)`),
    ).toThrow(/UNIQUE/);
    // a new series takes an id past every carried one
    const ids = db.prepare(`SELECT "id" FROM "MetricSeries" ORDER BY "id"`).pluck().all() as number[];
    const next = db
      .prepare(
        `INSERT INTO "MetricSeries" ("runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue") VALUES ('r2','new',0,0,0,0,0,0) RETURNING "id"`,
      )
      .pluck()
      .get() as number;
    expect(next).toBeGreaterThan(Math.max(...ids));
    db.close();
  });

  const skip = postgresUnavailable();
  describe.skipIf(skip)("on PostgreSQL", () => {
    const pgClient = usePostgresClient("series_migration");

    it("keeps every point and bucket under its run's series, and drops points of no series", async () => {
      const client = pgClient();
      for (const sql of migrationsBefore("postgresql", MIGRATION)) await client.query(sql);
      await client.query(OLD_ROWS);
      await client.query(migrationSql("postgresql", MIGRATION));
      expect((await client.query({ text: POINTS, rowMode: "array" })).rows).toEqual(WANT_POINTS);
      expect((await client.query({ text: BUCKETS, rowMode: "array" })).rows).toEqual(WANT_BUCKETS);
      const ids = (await client.query(`SELECT "id" FROM "MetricSeries"`)).rows.map((r) => r.id as number);
      const next = await client.query(
        `INSERT INTO "MetricSeries" ("runId","key","count","firstStep","lastStep","lastValue","minValue","maxValue") VALUES ('r2','new',0,0,0,0,0,0) RETURNING "id"`,
      );
      expect(next.rows[0].id).toBeGreaterThan(Math.max(...ids));
    });
  });
});
