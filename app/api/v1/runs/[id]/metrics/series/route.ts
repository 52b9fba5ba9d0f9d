import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { readSeries } from "@/lib/db/metrics";

/** Downsampled series (min/max buckets, stable power-of-two stride, `after` cursor for live polling). */
export const GET = route(routes.metricsSeries, ({ params, query }) => {
  assertRunExists(params.id);
  return readSeries(params.id, query.key, query);
});
