import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { deleteRun, getRun } from "@/lib/db/runs";

export const GET = route(routes.runGet, ({ params }) => getRun(params.id));

export const DELETE = route(routes.runDelete, async ({ params }) => {
  await deleteRun(params.id);
  return { deleted: params.id };
});
