import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { removeLabel } from "@/lib/db/labels";

export const DELETE = route(routes.trajectoryLabelRemove, ({ params, query }) => {
  removeLabel(params.id, params.labelId, query.turn);
  return { removed: params.labelId };
});
