import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { deleteLabel } from "@/lib/db/labels";

export const DELETE = route(routes.labelDelete, ({ params }) => {
  deleteLabel(params.id);
  return { deleted: params.id };
});
