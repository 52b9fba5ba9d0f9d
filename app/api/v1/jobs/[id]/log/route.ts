import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { jobLog } from "@/lib/runs/jobs-view";

/** Tail of the job's log: lines after `after` (pass back `next` to follow). */
export const GET = route(routes.jobLog, ({ params, query }) => jobLog(params.id, query.after, query.limit));
