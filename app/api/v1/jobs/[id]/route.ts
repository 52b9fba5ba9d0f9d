import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { jobView } from "@/lib/runs/jobs-view";

export const GET = route(routes.jobGet, ({ params }) => jobView(params.id));
