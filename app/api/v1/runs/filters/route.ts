import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { runFilters } from "@/lib/db/runs";

/** What the runs table can filter and sort by: environments, estimators, tags, metric keys, config paths. */
export const GET = route(routes.runsFilters, () => runFilters());
