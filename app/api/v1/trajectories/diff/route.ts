import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { trajectoryDiff } from "@/lib/db/task-timeline";

export const GET = route(routes.trajectoryDiff, ({ query }) => trajectoryDiff(query.a, query.b));
