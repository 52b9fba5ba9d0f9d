import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { groupCredit } from "@/lib/runs/credit-views";

/** One task group's per-turn advantages (heatmap slice): stored, or recomputed with any estimator over the step's batch. */
export const GET = route(routes.groupCredit, ({ params, query }) => {
  assertRunExists(params.id);
  return groupCredit(params.id, params.step!, params.groupId, query);
});
