import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { applyLabel, trajectoryLabels } from "@/lib/db/labels";

export const GET = route(routes.trajectoryLabels, ({ params }) => ({ labels: trajectoryLabels(params.id) }));

export const POST = route(routes.trajectoryLabelApply, ({ params, body }) => applyLabel(params.id, body));
