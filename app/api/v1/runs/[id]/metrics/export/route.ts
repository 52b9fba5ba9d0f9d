import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { assertRunExists } from "@/lib/db/runs";
import { metricColumnChunks, type MetricColumns } from "@/lib/db/metric-export";
import { endianness } from "node:os";

// packed blocks are little-endian whatever the host: a big-endian one swaps each 8-byte number
const LE = endianness() === "LE";

/** base64 of the 8-byte numbers of a typed array's buffer, little-endian. */
function base64LE(a: Int32Array | Float64Array): string {
  const b = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  if (!LE) b.swap64();
  return b.toString("base64");
}

/**
 * A packed block: steps as int64 (each the low 32-bit word and a zero one: steps are 0..2^31-1),
 * values and wall times as float64, non-finite values as the doubles themselves. A reader decodes
 * each array in one call (Python: base64 and array/numpy) instead of parsing a number at a time.
 */
function packedBlock(quoted: string, c: MetricColumns): string {
  const n = c.steps.length;
  const steps = new Int32Array(2 * n);
  const lo = LE ? 0 : 1; // the low word's place, so that swapping 8 bytes makes it little-endian
  for (let i = 0; i < n; i++) steps[2 * i + lo] = c.steps[i];
  return `{"key":${quoted},"count":${n},"steps":"${base64LE(steps)}","values":"${base64LE(Float64Array.from(c.values))}","wallTimes":"${base64LE(Float64Array.from(c.wallTimes))}"}`;
}

/** Full-resolution export (no sampling), streamed chunk by chunk: every stored point of the run, or of the given keys; columnar and packed: one block of arrays per chunk. */
export const GET = route(routes.metricsExport, ({ params, query: q }) => {
  assertRunExists(params.id);
  const keys = q.key === undefined ? null : Array.isArray(q.key) ? q.key : [q.key];
  const chunks = metricColumnChunks(params.id, keys);
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
      const c = next.value;
      const quoted = JSON.stringify(c.key); // one key per chunk
      const out: string[] = [];
      // NaN and ±Infinity: the bare words in CSV, the texts the ingest API takes ("NaN") in JSON
      const v = (x: number) => (Number.isFinite(x) || csv ? String(x) : `"${x}"`);
      const n = c.steps.length;
      if (csv) for (let i = 0; i < n; i++) out.push(`${quoted},${c.steps[i]},${v(c.values[i])},${c.wallTimes[i]}\n`);
      else if (q.format === "packed") out.push(packedBlock(quoted, c));
      else if (q.format === "columnar")
        out.push(`{"key":${quoted},"steps":[${c.steps.join(",")}],"values":[${c.values.map(v).join(",")}],"wallTimes":[${c.wallTimes.join(",")}]}`);
      else for (let i = 0; i < n; i++) out.push(`{"key":${quoted},"step":${c.steps[i]},"value":${v(c.values[i])},"wallTime":${c.wallTimes[i]}}`);
      controller.enqueue(enc.encode(head + (csv ? out.join("") : (first ? "" : ",") + out.join(","))));
      first = false;
    },
  });
  const name = `${params.id}-metrics.${csv ? "csv" : "json"}`;
  return new Response(stream, {
    headers: { "content-type": csv ? "text/csv; charset=utf-8" : "application/json", "content-disposition": `attachment; filename="${name}"` },
  });
});
