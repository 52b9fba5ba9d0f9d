// queryOptions factories per entity (TanStack Query): one place for keys, fetchers and polling.
import { queryOptions } from "@tanstack/react-query";
import { callApi } from "../client/api";
import type { RunFilters, RunList, RunOut } from "../schemas/runs";
import type { MetricKeyInfo, Series } from "../schemas/metrics";
import { creditSourceQuery, type CreditOverview, type CreditSource, type GroupCredit } from "../schemas/credit";
import type { JobOut, LogLines } from "../schemas/jobs";
import type { ImportOut } from "../schemas/imports";
import type { GroupOut, RolloutStepOut, TrajectoryOut, TurnOut } from "../schemas/rollouts";
import type { TaskCompare } from "../schemas/task-compare";
import { ACTIVE_STATUSES } from "../schemas/common";

const ACTIVE = new Set<string>(ACTIVE_STATUSES);
/** Poll while the run is live, stop when it is finished. */
export const livePoll = (status: string | undefined, ms = 1000) => (status && ACTIVE.has(status) ? ms : false);

export type RunListParams = Record<string, string | number | undefined>;

export const runsQuery = (params: RunListParams) =>
  queryOptions({
    queryKey: ["runs", params],
    queryFn: () => callApi<RunList>("/runs", { query: params }),
    refetchInterval: (q) => (q.state.data?.runs.some((r) => ACTIVE.has(r.status)) ? 2000 : false),
    placeholderData: (prev) => prev,
  });

export const runQuery = (id: string) =>
  queryOptions({
    queryKey: ["run", id],
    queryFn: () => callApi<RunOut>(`/runs/${id}`),
    refetchInterval: (q) => livePoll(q.state.data?.status),
  });

export const metricKeysQuery = (id: string, status?: string) =>
  queryOptions({
    queryKey: ["run", id, "metric-keys"],
    queryFn: () => callApi<{ keys: MetricKeyInfo[] }>(`/runs/${id}/metrics`),
    refetchInterval: livePoll(status, 2000),
  });

export const jobQuery = (id: string, status?: string) =>
  queryOptions({
    queryKey: ["job", id],
    queryFn: () => callApi<JobOut>(`/jobs/${id}`),
    refetchInterval: livePoll(status),
  });

export const stepsQuery = (runId: string, status?: string) =>
  queryOptions({
    queryKey: ["run", runId, "steps"],
    queryFn: () => callApi<{ steps: RolloutStepOut[]; total: number }>(`/runs/${runId}/steps`, { query: { pageSize: 1000 } }),
    refetchInterval: livePoll(status, 3000),
  });

export const groupsQuery = (runId: string, step: number) =>
  queryOptions({
    queryKey: ["run", runId, "groups", step],
    queryFn: () => callApi<{ groups: GroupOut[] }>(`/runs/${runId}/steps/${step}/groups`),
  });

export const trajectoriesQuery = (runId: string, params: { step?: number; groupId?: string; success?: string; page?: number }) =>
  queryOptions({
    queryKey: ["run", runId, "trajectories", params],
    queryFn: () => callApi<{ trajectories: TrajectoryOut[]; total: number }>(`/runs/${runId}/trajectories`, { query: { ...params, pageSize: 200 } }),
  });

export const trajectoryQuery = (id: string) =>
  queryOptions({
    queryKey: ["trajectory", id],
    queryFn: () => callApi<TrajectoryOut & { turns: TurnOut[] }>(`/trajectories/${id}`),
  });

export type { LogLines };

// ---------------------------------------------------------------- dashboard views

/** The runs-table filter keys that go to the API (and make the query key). */
export const RUN_LIST_KEYS = ["q", "status", "kind", "envId", "estimator", "tag", "config", "project", "sort", "order"] as const;

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
    queryFn: () => callApi<RunList>("/runs", { query: { ...params, page, pageSize: RUNS_PAGE_SIZE } }),
    refetchInterval: (q) => (q.state.data?.runs.some((r) => ACTIVE.has(r.status)) ? 3000 : false),
    staleTime: 5000,
  });

export const runFiltersQuery = () =>
  queryOptions({ queryKey: ["runs", "filters"], queryFn: () => callApi<RunFilters>("/runs/filters"), staleTime: 30_000 });

export const compareQuery = (ids: string[]) =>
  queryOptions({
    queryKey: ["compare", ids],
    queryFn: () => callApi<{ runs: RunOut[]; keys: { key: string; runs: number }[] }>("/compare", { query: { runs: ids.join(",") } }),
    enabled: ids.length > 0,
  });

export const taskCompareQuery = (a: string, b: string) =>
  queryOptions({ queryKey: ["compare-tasks", a, b], queryFn: () => callApi<TaskCompare>("/compare/tasks", { query: { a, b } }), enabled: !!a && !!b });

/** A finished (non-live) downsampled series, e.g. for comparing runs. */
export const seriesQuery = (runId: string, key: string, maxPoints = 1000) =>
  queryOptions({
    queryKey: ["run", runId, "series-static", key, maxPoints],
    queryFn: () => callApi<Series>(`/runs/${runId}/metrics/series`, { query: { key, maxPoints } }),
    staleTime: 10_000,
  });

export const groupCreditQuery = (runId: string, step: number, groupId: string, source: CreditSource) =>
  queryOptions({
    queryKey: ["run", runId, "group-credit", step, groupId, source.estimator ?? "stored", source.params ?? null],
    queryFn: () => callApi<GroupCredit>(`/runs/${runId}/steps/${step}/groups/${groupId}/credit`, { query: creditSourceQuery(source) }),
    staleTime: Infinity, // a stored step never changes
    retry: false,
    placeholderData: (prev) => prev,
  });

export const creditOverviewQuery = (runId: string, source: CreditSource, maxSteps = 50) =>
  queryOptions({
    queryKey: ["run", runId, "credit-overview", source.estimator ?? "stored", source.params ?? null, maxSteps],
    queryFn: () => callApi<CreditOverview>(`/runs/${runId}/credit`, { query: { ...creditSourceQuery(source), maxSteps } }),
    retry: false,
    placeholderData: (prev) => prev,
  });

/** An upload's import (job, progress, and its report once done), polled while it runs. */
export const importQuery = (id: string) =>
  queryOptions({
    queryKey: ["import", id],
    queryFn: () => callApi<ImportOut>(`/imports/${id}`),
    refetchInterval: (q) => livePoll(q.state.data?.job.status),
  });

/** The latest imports, polled while one of them runs. */
export const recentImportsQuery = () =>
  queryOptions({
    queryKey: ["imports"],
    queryFn: () => callApi<{ imports: ImportOut[]; total: number }>("/imports", { query: { pageSize: 10 } }),
    refetchInterval: (q) => (q.state.data?.imports.some((i) => ACTIVE.has(i.job.status)) ? 2000 : false),
  });
