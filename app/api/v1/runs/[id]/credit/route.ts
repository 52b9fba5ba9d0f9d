import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { creditOverview } from "@/lib/runs/credit-views";

/** Credit over training: step x turn-index mean (and mean |A|) advantage, and per-step batch diagnostics. */
export const GET = route(routes.creditOverview, ({ params, query }) => {
  const { maxSteps, maxTurns, ...source } = query;
  assertRunExists(params.id);
  return creditOverview(params.id, source, { maxSteps, maxTurns });
});
