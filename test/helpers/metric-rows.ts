// A run's stored metric rows as tests compare them: Metric and MetricRollup are keyed by the
// series' integer id (lib/db/metrics.ts), which differs between runs, so rows come back with the
// series' key in its place, in key order.
import { getRawDb } from "@/lib/db/raw";

const ORDER = { Metric: `m."step"`, MetricRollup: `m."level", m."bucket"` };

export function metricRows(runId: string, table: "Metric" | "MetricRollup" = "Metric"): Record<string, unknown>[] {
  const rows = getRawDb()
    .prepare(`SELECT s."key", m.* FROM "${table}" m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ? ORDER BY s."key", ${ORDER[table]}`)
    .all(runId) as Record<string, unknown>[];
  return rows.map(({ seriesId: _, ...r }) => r);
}

/** How many points a run stores. */
export function metricCount(runId: string): number {
  return getRawDb().prepare(`SELECT COUNT(*) FROM "Metric" m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ?`).pluck().get(runId) as number;
}

/** One key's stored steps, in order. */
export function metricSteps(runId: string, key: string): number[] {
  return getRawDb()
    .prepare(`SELECT m."step" FROM "Metric" m JOIN "MetricSeries" s ON s."id" = m."seriesId" WHERE s."runId" = ? AND s."key" = ? ORDER BY m."step"`)
    .pluck()
    .all(runId, key) as number[];
}
