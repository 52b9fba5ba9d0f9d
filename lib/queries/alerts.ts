// Alerts and failure clusters (react-query factories over their routes).
import { queryOptions } from "@tanstack/react-query";
import { callRoute } from "../client/api";
import { routes } from "../api/routes";

/** Alerts, newest first: of one run, or of every run; polled, as they arrive with ingest. */
export const alertsQuery = (q: { runId?: string; limit?: number } = {}) =>
  queryOptions({
    queryKey: ["alerts", q.runId ?? "all", q.limit ?? 50],
    queryFn: () => callRoute(routes.alertsList, { query: { ...(q.runId ? { runId: q.runId } : {}), limit: q.limit ?? 50 } }),
    refetchInterval: 10_000,
  });

/** A step range's failure clusters (steps never change: kept while the range is the same). */
export const failureClustersQuery = (runId: string, range: { from?: number; to?: number }) =>
  queryOptions({
    queryKey: ["run", runId, "failure-clusters", range.from ?? null, range.to ?? null],
    queryFn: () =>
      callRoute(routes.failureClusters, {
        params: { id: runId },
        query: { ...(range.from !== undefined ? { from: range.from } : {}), ...(range.to !== undefined ? { to: range.to } : {}) },
      }),
    staleTime: 60_000,
  });

/** A project's alert rules and webhook (the default rules, marked, when it has none of its own). */
export const alertRulesQuery = (projectId: string) =>
  queryOptions({
    queryKey: ["alert-rules", projectId],
    queryFn: () => callRoute(routes.alertRules, { params: { id: projectId } }),
    enabled: !!projectId,
  });

/** Every project (the monitors page's picker). */
export const projectsQuery = () => queryOptions({ queryKey: ["projects"], queryFn: () => callRoute(routes.projects), staleTime: 30_000 });
