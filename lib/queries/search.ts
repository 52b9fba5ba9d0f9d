// The trajectory search's query options (GET /api/v1/search/trajectories), keyed by its URL parameters.
import { queryOptions } from "@tanstack/react-query";
import { callRoute, type RouteQuery } from "../client/api";
import { routes } from "../api/routes";
import type { TrajectorySearchResult } from "../schemas/search";

/** Every query parameter the search page keeps in its URL (the API's, less the page cursor). */
export const SEARCH_KEYS = [
  "runs",
  "project",
  "text",
  "in",
  "outcome",
  "minLength",
  "maxLength",
  "minReturn",
  "maxReturn",
  "step",
  "minStep",
  "maxStep",
  "envId",
  "task",
  "label",
  "minTurn",
  "maxTurn",
  "advantage",
  "minAdvantage",
  "maxAdvantage",
  "minReward",
  "maxReward",
  "valid",
  "anchor",
  "sort",
  "order",
  "pageSize",
] as const;
export type SearchKey = (typeof SEARCH_KEYS)[number];

/** The search's URL parameters, as the search page keeps them: in SEARCH_KEYS order, empty values dropped. */
export type SearchParams = Record<string, string>;

export function searchParamsOf(get: (k: string) => string | null | undefined): SearchParams {
  const out: SearchParams = {};
  for (const k of SEARCH_KEYS) {
    const v = get(k);
    if (v) out[k] = v;
  }
  return out;
}

export const searchQuery = (params: SearchParams) =>
  queryOptions({
    queryKey: ["search-trajectories", params],
    // the page keeps the URL's text; the server parses and checks it (a bad value is its 400, shown by the page)
    queryFn: () => callRoute(routes.searchTrajectories, { query: params as RouteQuery<typeof routes.searchTrajectories> }),
    staleTime: 10_000,
  });

/**
 * The server's answers that make one page of the search from `params` (its cursor, if any): the
 * answer to `params` and, while the last one known is `partial` (its time spent before the page
 * filled), the one that goes on from its cursor, asked for the hits still missing. `known` gives an
 * answer already fetched (the query cache); `stopped`: the parts already fetched, no new one.
 */
export function pageParts(params: SearchParams, known: (p: SearchParams) => TrajectorySearchResult | undefined, stopped = false): SearchParams[] {
  const size = Number(params.pageSize ?? 50) || 50;
  const parts = [params];
  let found = 0;
  for (;;) {
    const d = known(parts[parts.length - 1]);
    if (!d?.partial || !d.next) return parts;
    found += d.trajectories.length;
    const next = { ...params, cursor: d.next, pageSize: String(size - found) };
    if (stopped && !known(next)) return parts;
    parts.push(next);
  }
}

/** The answers of a page's parts fetched so far, in order, as one page: their hits, the last one's cursor, the candidates all checked. */
export function joinParts(answers: readonly TrajectorySearchResult[]): TrajectorySearchResult {
  const last = answers[answers.length - 1];
  return {
    trajectories: answers.flatMap((a) => a.trajectories),
    next: last.next,
    partial: last.partial,
    scanned: answers.reduce((n, a) => n + a.scanned, 0),
  };
}
