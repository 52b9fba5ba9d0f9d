// The trajectory search's query options (GET /api/v1/search/trajectories), keyed by its URL parameters.
import { queryOptions } from "@tanstack/react-query";
import { callRoute, type RouteQuery } from "../client/api";
import { routes } from "../api/routes";

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
