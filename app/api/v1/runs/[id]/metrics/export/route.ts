import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { metricChunks } from "@/lib/db/metrics";

/** Full-resolution export (no sampling), streamed chunk by chunk: every stored point of the run, or of the given keys; columnar: one block of arrays per chunk. */
export const GET = route(routes.metricsExport, ({ params, query: q }) => {
  assertRunExists(params.id);
  const keys = q.key === undefined ? null : Array.isArray(q.key) ? q.key : [q.key];
  const chunks = metricChunks(params.id, keys);
  const enc = new TextEncoder();
  const csv = q.format === "csv";
  let first = true;
  const stream = new ReadableStream({
    pull(controller) {
      const head = first ? (csv ? "key,step,value,wall_time\n" : "[") : "";
      const next = chunks.next();
      if (next.done) {
        controller.enqueue(enc.encode(head + (csv ? "" : "]")));
        controller.close();
        return;
      }
      const rows = next.value;
      const quoted = JSON.stringify(rows[0][0]); // one key per chunk
      const out: string[] = [];
      // NaN and ±Infinity: the bare words in CSV, the texts the ingest API takes ("NaN") in JSON
      const v = (x: number) => (Number.isFinite(x) || csv ? String(x) : `"${x}"`);
      if (csv) for (const r of rows) out.push(`${quoted},${r[1]},${v(r[2])},${r[3]}\n`);
      else if (q.format === "columnar")
        out.push(
          `{"key":${quoted},"steps":[${rows.map((r) => r[1]).join(",")}],"values":[${rows.map((r) => v(r[2])).join(",")}],"wallTimes":[${rows.map((r) => r[3]).join(",")}]}`,
        );
      else for (const r of rows) out.push(`{"key":${quoted},"step":${r[1]},"value":${v(r[2])},"wallTime":${r[3]}}`);
      controller.enqueue(enc.encode(head + (csv ? out.join("") : (first ? "" : ",") + out.join(","))));
      first = false;
    },
  });
  const name = `${params.id}-metrics.${csv ? "csv" : "json"}`;
  return new Response(stream, {
    headers: { "content-type": csv ? "text/csv; charset=utf-8" : "application/json", "content-disposition": `attachment; filename="${name}"` },
  });
});
