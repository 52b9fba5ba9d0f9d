import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { envCatalog } from "@/lib/runs/catalog";

export const GET = route(routes.envs, () => ({ envs: envCatalog() }));
