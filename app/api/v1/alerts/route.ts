import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { listAlerts } from "@/lib/db/alerts";

export const GET = route(routes.alertsList, ({ query }) => ({ alerts: listAlerts(query) }));
