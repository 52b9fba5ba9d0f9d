import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { openApiDocument } from "@/lib/api/openapi";

export const GET = route(routes.openapi, () => openApiDocument());
