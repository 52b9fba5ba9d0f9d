-- A downsampled chart's points carry their wall times: MetricRollup keeps the wall time of the point
-- at minStep and of the point at maxStep, so a chart read no longer looks each of its points up
-- again in Metric. Existing buckets take them from those points' Metric rows (every bucket's min and
-- max step has its row: a bucket is written, rebuilt or deleted with its points).
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_MetricRollup" (
    "seriesId" INTEGER NOT NULL,
    "level" INTEGER NOT NULL,
    "bucket" INTEGER NOT NULL,
    "count" INTEGER NOT NULL,
    "minStep" INTEGER NOT NULL,
    "minValue" REAL NOT NULL,
    "maxStep" INTEGER NOT NULL,
    "maxValue" REAL NOT NULL,
    "firstStep" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "lastValue" REAL NOT NULL,
    "minWallTime" REAL NOT NULL,
    "maxWallTime" REAL NOT NULL,

    PRIMARY KEY ("seriesId", "level", "bucket")
) WITHOUT ROWID;
INSERT INTO "new_MetricRollup" ("seriesId", "level", "bucket", "count", "minStep", "minValue", "maxStep", "maxValue", "firstStep", "lastStep", "lastValue", "minWallTime", "maxWallTime")
SELECT r."seriesId", r."level", r."bucket", r."count", r."minStep", r."minValue", r."maxStep", r."maxValue", r."firstStep", r."lastStep", r."lastValue",
       COALESCE(lo."wallTime", 0), COALESCE(hi."wallTime", 0)
FROM "MetricRollup" r
LEFT JOIN "Metric" lo ON lo."seriesId" = r."seriesId" AND lo."step" = r."minStep"
LEFT JOIN "Metric" hi ON hi."seriesId" = r."seriesId" AND hi."step" = r."maxStep";
DROP TABLE "MetricRollup";
ALTER TABLE "new_MetricRollup" RENAME TO "MetricRollup";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
