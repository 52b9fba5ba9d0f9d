-- Metric and MetricRollup keyed by an integer series id (MetricSeries.id) instead of the run's id
-- and the key's text (prisma/migrations/20261123174108_metric_series_ids says why). Existing rows
-- are carried over: each series gets an id, then its points and buckets are copied under it.
ALTER TABLE "MetricSeries" DROP CONSTRAINT "MetricSeries_pkey",
ADD COLUMN     "id" SERIAL NOT NULL,
ADD CONSTRAINT "MetricSeries_pkey" PRIMARY KEY ("id");
CREATE UNIQUE INDEX "MetricSeries_runId_key_key" ON "MetricSeries"("runId", "key");

ALTER TABLE "Metric" RENAME TO "Metric_old";
ALTER TABLE "Metric_old" RENAME CONSTRAINT "Metric_pkey" TO "Metric_old_pkey";
CREATE TABLE "Metric" (
    "seriesId" INTEGER NOT NULL,
    "step" INTEGER NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,
    "wallTime" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "Metric_pkey" PRIMARY KEY ("seriesId","step")
);
INSERT INTO "Metric" ("seriesId", "step", "value", "wallTime")
SELECT s."id", m."step", m."value", m."wallTime" FROM "Metric_old" m JOIN "MetricSeries" s ON s."runId" = m."runId" AND s."key" = m."key";
DROP TABLE "Metric_old";

ALTER TABLE "MetricRollup" RENAME TO "MetricRollup_old";
ALTER TABLE "MetricRollup_old" RENAME CONSTRAINT "MetricRollup_pkey" TO "MetricRollup_old_pkey";
CREATE TABLE "MetricRollup" (
    "seriesId" INTEGER NOT NULL,
    "level" INTEGER NOT NULL,
    "bucket" INTEGER NOT NULL,
    "count" INTEGER NOT NULL,
    "minStep" INTEGER NOT NULL,
    "minValue" DOUBLE PRECISION NOT NULL,
    "maxStep" INTEGER NOT NULL,
    "maxValue" DOUBLE PRECISION NOT NULL,
    "firstStep" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "lastValue" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "MetricRollup_pkey" PRIMARY KEY ("seriesId","level","bucket")
);
INSERT INTO "MetricRollup" ("seriesId", "level", "bucket", "count", "minStep", "minValue", "maxStep", "maxValue", "firstStep", "lastStep", "lastValue")
SELECT s."id", r."level", r."bucket", r."count", r."minStep", r."minValue", r."maxStep", r."maxValue", r."firstStep", r."lastStep", r."lastValue"
FROM "MetricRollup_old" r JOIN "MetricSeries" s ON s."runId" = r."runId" AND s."key" = r."key";
DROP TABLE "MetricRollup_old";
