import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { listJobs } from "@/lib/jobs";

/** The queue as users see it: jobs filtered by status, kind or run, paginated. */
export const GET = route(routes.jobsList, ({ query }) => listJobs(query));
