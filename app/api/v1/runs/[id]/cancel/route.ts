import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { cancelRun } from "@/lib/runs/actions";

export const POST = route(routes.runCancel, ({ params }) => cancelRun(params.id));
