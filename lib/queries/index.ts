// queryOptions factories per entity (TanStack Query): one place for keys, fetchers and polling.
// Every fetch goes through callRoute with a route declaration: paths and answer types come from
// lib/api/routes.ts, never restated here.
import { queryOptions } from "@tanstack/react-query";
import { callRoute } from "../client/api";
import { routes } from "../api/routes";
import { creditSourceQuery, type CreditSource } from "../schemas/credit";
import type { LogLines } from "../schemas/jobs";
import { ACTIVE_STATUSES } from "../schemas/common";

/** The route declarations, for components' calls (`callRoute(routes.runCancel, …)`) and links (`routeHref`). */
export { routes };

const ACTIVE = new Set<string>(ACTIVE_STATUSES);
/** Poll while the run is live, stop when it is finished. */
export const livePoll = (status: string | undefined, ms = 1000) => (status && ACTIVE.has(status) ? ms : false);

export const runQuery = (id: string) =>
  queryOptions({
    queryKey: ["run", id],
    queryFn: () => callRoute(routes.runGet, { params: { id } }),
    refetchInterval: (q) => livePoll(q.state.data?.status),
  });

export const metricKeysQuery = (id: string, status?: string) =>
  queryOptions({
    queryKey: ["run", id, "metric-keys"],
    queryFn: () => callRoute(routes.metricsKeys, { params: { id } }),
    refetchInterval: livePoll(status, 2000),
  });

export const stepsQuery = (runId: string, status?: string) =>
  queryOptions({
    queryKey: ["run", runId, "steps"],
    queryFn: () => callRoute(routes.stepsList, { params: { id: runId }, query: { pageSize: 1000 } }),
    refetchInterval: livePoll(status, 3000),
  });

/** A training run's checkpoints (polled while it runs: it saves more). */
export const checkpointsQuery = (runId: string, status?: string) =>
  queryOptions({
    queryKey: ["run", runId, "checkpoints"],
    queryFn: () => callRoute(routes.runCheckpoints, { params: { id: runId } }),
    refetchInterval: livePoll(status, 5000),
  });

export const groupsQuery = (runId: string, step: number) =>
  queryOptions({
    queryKey: ["run", runId, "groups", step],
    queryFn: () => callRoute(routes.groupsList, { params: { id: runId, step } }),
  });

export const trajectoryQuery = (id: string) =>
  queryOptions({
    queryKey: ["trajectory", id],
    queryFn: () => callRoute(routes.trajectoryGet, { params: { id } }),
  });

export type { LogLines };

// ---------------------------------------------------------------- dashboard views

/** The runs-table filter keys that go to the API (and make the query key). */
export const RUN_LIST_KEYS = ["q", "status", "kind", "envId", "estimator", "tag", "config", "project", "sort", "order", "sweep"] as const;

/** The run-list filters from URL search params, normalised (defined values only, fixed key order). */
export function runListParams(sp: { get(k: string): string | null }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of RUN_LIST_KEYS) {
    const v = sp.get(k);
    if (v) out[k] = v;
  }
  return out;
}

/** Page size of the virtualised runs table: pages are fetched as they scroll into view. */
export const RUNS_PAGE_SIZE = 100;

export const runsPageQuery = (params: Record<string, string>, page: number) =>
  queryOptions({
    queryKey: ["runs", "page", params, page],
    queryFn: () => callRoute(routes.runsList, { query: { ...params, page, pageSize: RUNS_PAGE_SIZE } }),
    refetchInterval: (q) => (q.state.data?.runs.some((r) => ACTIVE.has(r.status)) ? 3000 : false),
    staleTime: 5000,
  });

export const runFiltersQuery = () => queryOptions({ queryKey: ["runs", "filters"], queryFn: () => callRoute(routes.runsFilters), staleTime: 30_000 });

export const compareQuery = (ids: string[]) =>
  queryOptions({
    queryKey: ["compare", ids],
    queryFn: () => callRoute(routes.compare, { query: { runs: ids.join(",") } }),
    enabled: ids.length > 0,
  });

export const taskCompareQuery = (a: string, b: string) =>
  queryOptions({ queryKey: ["compare-tasks", a, b], queryFn: () => callRoute(routes.compareTasks, { query: { a, b } }), enabled: !!a && !!b });

/** A finished (non-live) downsampled series, e.g. for comparing runs. */
export const seriesQuery = (runId: string, key: string, maxPoints = 1000) =>
  queryOptions({
    queryKey: ["run", runId, "series-static", key, maxPoints],
    queryFn: () => callRoute(routes.metricsSeries, { params: { id: runId }, query: { key, maxPoints } }),
    staleTime: 10_000,
  });

/** One metric of a run at full resolution (the export, columnar): exact stored values, not buckets; non-finite values as their texts. */
export const metricExactQuery = (runId: string, key: string) =>
  queryOptions({
    queryKey: ["run", runId, "metric-exact", key],
    queryFn: async () => {
      const blocks = (await callRoute(routes.metricsExport, { params: { id: runId }, query: { format: "columnar", key } })) as unknown as {
        steps: number[];
        values: (number | string)[];
        wallTimes: number[];
      }[];
      return { steps: blocks.flatMap((b) => b.steps), values: blocks.flatMap((b) => b.values), wallTimes: blocks.flatMap((b) => b.wallTimes) };
    },
    staleTime: 10_000,
  });

export const groupCreditQuery = (runId: string, step: number, groupId: string, source: CreditSource) =>
  queryOptions({
    queryKey: ["run", runId, "group-credit", step, groupId, source.estimator ?? "stored", source.params ?? null],
    queryFn: () => callRoute(routes.groupCredit, { params: { id: runId, step, groupId }, query: creditSourceQuery(source) }),
    staleTime: Infinity, // a stored step never changes
    retry: false,
    placeholderData: (prev) => prev,
  });

export const creditOverviewQuery = (runId: string, source: CreditSource, maxSteps = 50) =>
  queryOptions({
    queryKey: ["run", runId, "credit-overview", source.estimator ?? "stored", source.params ?? null, maxSteps],
    queryFn: () => callRoute(routes.creditOverview, { params: { id: runId }, query: { ...creditSourceQuery(source), maxSteps } }),
    retry: false,
    placeholderData: (prev) => prev,
  });

/** An upload's import (job, progress, and its report once done), polled while it runs. */
export const importQuery = (id: string) =>
  queryOptions({
    queryKey: ["import", id],
    queryFn: () => callRoute(routes.importGet, { params: { id } }),
    refetchInterval: (q) => livePoll(q.state.data?.job.status),
  });

/** The latest imports, polled while one of them runs. */
export const recentImportsQuery = () =>
  queryOptions({
    queryKey: ["imports"],
    queryFn: () => callRoute(routes.importsList, { query: { pageSize: 10 } }),
    refetchInterval: (q) => (q.state.data?.imports.some((i) => ACTIVE.has(i.job.status)) ? 2000 : false),
  });

/** A sweep and its runs' progress, polled while any of its runs is queued or running. */
export const sweepQuery = (id: string) =>
  queryOptions({
    queryKey: ["sweep", id],
    queryFn: () => callRoute(routes.sweepGet, { params: { id } }),
    enabled: !!id,
    refetchInterval: (q) => (Object.keys(q.state.data?.status ?? { queued: 1 }).some((s) => ACTIVE.has(s)) ? 2000 : false),
  });
