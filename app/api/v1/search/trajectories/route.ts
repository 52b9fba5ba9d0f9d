import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { searchTrajectories } from "@/lib/db/trajectory-search";

export const GET = route(routes.searchTrajectories, ({ query }) => searchTrajectories(query));
