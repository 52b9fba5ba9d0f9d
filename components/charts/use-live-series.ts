"use client";
// A metric series that follows a live run: each poll fetches only buckets after the cursor.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { callRoute } from "@/lib/client/api";
import { routes } from "@/lib/queries";
import { mergeSeries, seriesCursor, type SeriesState } from "@/lib/charts/series-merge";

export function useLiveSeries(runId: string, key: string, live: boolean, maxPoints = 1500, enabled = true) {
  const qc = useQueryClient();
  const queryKey = ["run", runId, "series", key, maxPoints];
  return useQuery({
    queryKey,
    queryFn: async () => {
      const prev = qc.getQueryData<SeriesState>(queryKey);
      const res = await callRoute(routes.metricsSeries, { params: { id: runId }, query: { key, maxPoints, ...seriesCursor(prev) } });
      return mergeSeries(prev, res);
    },
    enabled: enabled && key !== "",
    refetchInterval: live ? 1500 : false,
    // a finished run's points never change (the run page refetches once when a run finishes)
    staleTime: live ? 0 : Infinity,
  });
}
