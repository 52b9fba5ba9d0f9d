// A run's stored metric rows as tests compare them (lib/db/inspect.ts reads them): Metric and
// MetricRollup rows come back with the series' key in place of its integer id, in key order.
import { countRows } from "@/lib/db/inspect";

export { metricRows, metricSteps } from "@/lib/db/inspect";

/** How many points a run stores. */
export function metricCount(runId: string): number {
  return countRows("Metric", runId);
}
