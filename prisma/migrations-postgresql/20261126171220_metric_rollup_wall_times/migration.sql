-- A downsampled chart's points carry their wall times: MetricRollup keeps the wall time of the point
-- at minStep and of the point at maxStep, so a chart read no longer looks each of its points up
-- again in Metric. Existing buckets take them from those points' Metric rows (every bucket's min and
-- max step has its row: a bucket is written, rebuilt or deleted with its points).
ALTER TABLE "MetricRollup" ADD COLUMN "minWallTime" DOUBLE PRECISION, ADD COLUMN "maxWallTime" DOUBLE PRECISION;
UPDATE "MetricRollup" r SET
  "minWallTime" = COALESCE((SELECT m."wallTime" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" = r."minStep"), 0),
  "maxWallTime" = COALESCE((SELECT m."wallTime" FROM "Metric" m WHERE m."seriesId" = r."seriesId" AND m."step" = r."maxStep"), 0);
ALTER TABLE "MetricRollup" ALTER COLUMN "minWallTime" SET NOT NULL, ALTER COLUMN "maxWallTime" SET NOT NULL;
