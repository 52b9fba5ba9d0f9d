import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { compareTasks } from "@/lib/runs/task-compare";

export const GET = route(routes.compareTasks, ({ query }) => compareTasks(query.a, query.b));
