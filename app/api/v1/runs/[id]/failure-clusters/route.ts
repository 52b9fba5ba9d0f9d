import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { failureClusters } from "@/lib/runs/failure-clusters";

export const GET = route(routes.failureClusters, ({ params, query }) => failureClusters(params.id, query));
