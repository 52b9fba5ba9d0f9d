import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { cancelImport } from "@/lib/runs/imports";

export const POST = route(routes.importCancel, ({ params }) => cancelImport(params.id));
