import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { readSeries } from "@/lib/db/metric-series";

/** Downsampled series (min/max buckets, stable power-of-two stride, `after` cursor for live polling); 404 for an unknown run. */
export const GET = route(routes.metricsSeries, ({ params, query }) => readSeries(params.id, query.key, query));
