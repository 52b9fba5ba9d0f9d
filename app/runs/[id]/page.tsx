import { Suspense } from "react";
import { RunView } from "@/components/runs/run-view";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { getRun } from "@/lib/db/runs";
import { listSeries, readSeries } from "@/lib/db/metric-series";
import { mergeSeries } from "@/lib/charts/series-merge";
import { CHART_POINTS } from "@/lib/charts/prepare-series";
import { prefetchedKeys } from "@/components/charts/run-chart-plan";
import { metricKeysQuery, runQuery } from "@/lib/queries";
import { listAlerts } from "@/lib/db/alerts";
import { alertsQuery } from "@/lib/queries/alerts";

export const dynamic = "force-dynamic";
export const metadata = { title: "Run" };

export default async function RunPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const run = tryRead(() => getRun(id));
  const keys = run ? tryRead(() => listSeries(id)) : undefined;
  // One server pass instead of one request per chart after hydration (the browser would queue
  // them six at a time): the charts at the top of the page, in the order it shows them, as many as
  // fit the points budget (all of a typical train run's), are in the HTML itself; RunView marks the
  // same ones eager. Same key and shape as useLiveSeries.
  const series: [readonly unknown[], unknown][] = prefetchedKeys(keys ?? []).map((key) => [
    ["run", id, "series", key, CHART_POINTS],
    tryRead(() => mergeSeries(undefined, readSeries(id, key, { maxPoints: CHART_POINTS }))),
  ]);
  return (
    <Hydrate
      seed={[
        [runQuery(id).queryKey, run],
        [metricKeysQuery(id).queryKey, keys ? { keys } : undefined],
        ...series,
        [alertsQuery({ runId: id, limit: 50 }).queryKey, run ? tryRead(() => ({ alerts: listAlerts({ runId: id, limit: 50 }) })) : undefined],
      ]}
    >
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <RunView runId={id} />
      </Suspense>
    </Hydrate>
  );
}
