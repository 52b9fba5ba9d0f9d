import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { listProjects } from "@/lib/db/runs";

export const GET = route(routes.projects, () => ({ projects: listProjects() }));
