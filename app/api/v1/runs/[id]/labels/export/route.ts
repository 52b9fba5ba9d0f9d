import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { runLabelRows } from "@/lib/db/labels";

/** A run's labels as JSON Lines: step, task, index, turn (null: the trajectory), label, note, the trajectory's id now. */
export const GET = route(routes.runLabelsExport, ({ params, query }) => {
  assertRunExists(params.id);
  const body = runLabelRows(params.id, query.label)
    .map((r) => `${JSON.stringify(r)}\n`)
    .join("");
  return new Response(body, {
    headers: { "content-type": "application/x-ndjson", "content-disposition": `attachment; filename="${params.id}-labels.jsonl"` },
  });
});
