import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { taskTimeline } from "@/lib/db/task-timeline";

export const GET = route(routes.taskTimeline, ({ query }) => taskTimeline(query));
