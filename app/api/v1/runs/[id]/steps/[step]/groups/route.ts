import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { listGroups } from "@/lib/db/rollouts";

export const GET = route(routes.groupsList, ({ params }) => {
  assertRunExists(params.id);
  return { groups: listGroups(params.id, params.step!) };
});
