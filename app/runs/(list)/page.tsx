import { Suspense } from "react";
import { RunsTable } from "@/components/runs/runs-table";
import { RecentAlerts } from "@/components/alerts/recent-alerts";
import { listAlerts } from "@/lib/db/alerts";
import { alertsQuery } from "@/lib/queries/alerts";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { listRuns, runFilters } from "@/lib/db/runs";
import { runListParams, runFiltersQuery, runsPageQuery, RUNS_PAGE_SIZE } from "@/lib/queries";
import { runListQuerySchema } from "@/lib/schemas/runs";

export const dynamic = "force-dynamic";
export const metadata = { title: "Runs" };

export default async function RunsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const params = runListParams({ get: (k) => (typeof sp[k] === "string" ? (sp[k] as string) : null) });
  const first = tryRead(() => {
    const q = runListQuerySchema.parse({ ...params, page: 1, pageSize: RUNS_PAGE_SIZE });
    return { ...listRuns(q), page: 1, pageSize: RUNS_PAGE_SIZE };
  });
  return (
    <div className="space-y-4">
      <h1 className="text-xl font-semibold tracking-tight">Runs</h1>
      <Hydrate
        seed={[
          [runsPageQuery(params, 1).queryKey, first],
          [runFiltersQuery().queryKey, tryRead(() => runFilters())],
          [alertsQuery({ limit: 8 }).queryKey, tryRead(() => ({ alerts: listAlerts({ limit: 8 }) }))],
        ]}
      >
        <RecentAlerts />
        <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
          <RunsTable />
        </Suspense>
      </Hydrate>
    </div>
  );
}
