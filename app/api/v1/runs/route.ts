import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { getRun, listRuns } from "@/lib/db/runs";
import { launchRun } from "@/lib/runs/launch";

export const GET = route(routes.runsList, ({ query }) => ({ ...listRuns(query), page: query.page, pageSize: query.pageSize }));

export const POST = route(routes.runsLaunch, async ({ body }) => getRun((await launchRun(body)).runId));
