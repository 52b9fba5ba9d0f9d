import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { labelSteps } from "@/lib/db/labels";

export const GET = route(routes.runLabelSteps, ({ params }) => {
  assertRunExists(params.id);
  return labelSteps(params.id);
});
