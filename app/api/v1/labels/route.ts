import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { createLabel, listLabels } from "@/lib/db/labels";

export const GET = route(routes.labelsList, ({ query }) => ({ labels: listLabels(query.project) }));

export const POST = route(routes.labelCreate, ({ body }) => createLabel(body));
