import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { importView } from "@/lib/runs/imports";

export const GET = route(routes.importGet, ({ params }) => importView(params.id));
