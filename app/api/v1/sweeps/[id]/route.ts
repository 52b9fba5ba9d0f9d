import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { getSweep } from "@/lib/db/sweeps";

export const GET = route(routes.sweepGet, ({ params }) => getSweep(params.id));
