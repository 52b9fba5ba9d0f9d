import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { listTrajectories } from "@/lib/db/rollouts";

export const GET = route(routes.trajectoriesList, ({ params, query }) => {
  assertRunExists(params.id);
  const success = query.success === undefined ? undefined : query.success === "true";
  return { ...listTrajectories(params.id, { ...query, success }), page: query.page, pageSize: query.pageSize };
});
