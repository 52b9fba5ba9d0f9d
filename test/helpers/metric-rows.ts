// A run's stored metric rows as tests compare them (test/helpers/db-inspect.ts reads them): Metric and
// MetricRollup rows come back with the series' key in place of its integer id, in key order.
import { countRows } from "./db-inspect";

export { metricRows, metricSteps } from "./db-inspect";

/** How many points a run stores. */
export function metricCount(runId: string): number {
  return countRows("Metric", runId);
}
