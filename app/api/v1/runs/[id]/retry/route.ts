import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { retryRun } from "@/lib/runs/actions";

export const POST = route(routes.runRetry, ({ params }) => retryRun(params.id));
