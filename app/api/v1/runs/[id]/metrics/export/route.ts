import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { iterateMetrics } from "@/lib/db/metrics";

/** Full-resolution export (no sampling), streamed: every stored point of the run, or of the given keys. */
export const GET = route(routes.metricsExport, ({ params, query: q }) => {
  assertRunExists(params.id);
  const keys = q.key === undefined ? null : Array.isArray(q.key) ? q.key : [q.key];
  const rows = iterateMetrics(params.id, keys);
  const enc = new TextEncoder();
  const csv = q.format === "csv";
  let first = true;
  const stream = new ReadableStream({
    pull(controller) {
      const chunk: string[] = [];
      if (first) chunk.push(csv ? "key,step,value,wall_time\n" : "[");
      for (let i = 0; i < 5000; i++) {
        const r = rows.next();
        if (r.done) {
          if (!csv) chunk.push("]");
          controller.enqueue(enc.encode(chunk.join("")));
          controller.close();
          return;
        }
        const p = r.value;
        chunk.push(csv ? `${JSON.stringify(p.key)},${p.step},${p.value},${p.wallTime}\n` : `${first ? "" : ","}${JSON.stringify(p)}`);
        first = false;
      }
      controller.enqueue(enc.encode(chunk.join("")));
    },
  });
  const name = `${params.id}-metrics.${q.format}`;
  return new Response(stream, {
    headers: { "content-type": csv ? "text/csv; charset=utf-8" : "application/json", "content-disposition": `attachment; filename="${name}"` },
  });
});
