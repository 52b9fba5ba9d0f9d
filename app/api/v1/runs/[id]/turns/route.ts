import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { turnsPage } from "@/lib/db/rollouts";

/** All turns of a run in write order, one page per call (`after` = the previous page's `next`); 404 for an unknown run. */
export const GET = route(routes.turnsPage, ({ params, query }) => turnsPage(params.id, query.after, query.limit));
