import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { turnsPage } from "@/lib/db/rollouts";

/** All turns of a run in write order, one page per call (`after` = the previous page's `next`). */
export const GET = route(routes.turnsPage, ({ params, query }) => {
  assertRunExists(params.id);
  return turnsPage(params.id, query.after, query.limit);
});
