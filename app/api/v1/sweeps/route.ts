import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { getSweep, listSweeps } from "@/lib/db/sweeps";
import { launchSweep } from "@/lib/runs/sweeps";

export const GET = route(routes.sweepsList, ({ query }) => ({ sweeps: listSweeps(query) }));

export const POST = route(routes.sweepsLaunch, ({ body }) => getSweep(launchSweep(body).sweepId));
