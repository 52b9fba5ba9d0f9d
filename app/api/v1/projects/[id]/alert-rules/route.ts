import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { readAlertConfig, writeAlertConfig } from "@/lib/db/alerts";

export const GET = route(routes.alertRules, ({ params }) => readAlertConfig(params.id));
export const POST = route(routes.alertRulesSet, ({ params, body }) => writeAlertConfig(params.id, body));
