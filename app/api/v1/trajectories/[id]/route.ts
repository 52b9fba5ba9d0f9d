import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { NotFoundError } from "@/lib/schemas/errors";
import { getTrajectory } from "@/lib/db/rollouts";

export const GET = route(routes.trajectoryGet, ({ params }) => {
  const t = getTrajectory(params.id);
  if (!t) throw new NotFoundError("trajectory", params.id);
  return t;
});
