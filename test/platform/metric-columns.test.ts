// Columnar metric batches: the fast array checks agree with the declared schema, both body shapes
// store the same rows and rollups (appended or overwriting), and a bad value is named by index.
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

const { url } = useTempDatabase("metric-columns");
const { metricColumnsLookValid, metricColumnsSchema, logMetricsSchema } = await import("@/lib/schemas/metrics");
const { ingestMetrics } = await import("@/lib/ingest/batches");
const { handleIngest } = await import("@/lib/ingest/thread");
const { getRawDb } = await import("@/lib/db/raw");
const { createRun } = await import("@/lib/db/runs");
const { listSeries, readSeries } = await import("@/lib/db/metric-series");
const { metricRows } = await import("../helpers/metric-rows");
const { writeTransaction } = await import("@/lib/db/raw");
const { recordBatch } = await import("@/lib/db/ingest-batches");

let seed = 11;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];

function validBody(): Record<string, unknown> {
  const n = 1 + Math.floor(rand() * 6);
  const steps = Array.from({ length: n }, () => Math.floor(rand() * 50));
  const keys = Array.from({ length: Math.floor(rand() * 4) }, (_, i) => `k/${i}`);
  const body: Record<string, unknown> = { steps, values: Object.fromEntries(keys.map((k) => [k, steps.map(() => (rand() < 0.2 ? null : rand() * 10 - 5))])) };
  if (rand() < 0.5) body.wallTimes = steps.map(() => 1.7e9 + rand());
  if (rand() < 0.3) body.batchId = "b:1";
  return body;
}

/** One random defect (or none) of the kinds the fast check must catch. */
function mutate(b: Record<string, unknown>): Record<string, unknown> {
  const c = structuredClone(b) as { steps: unknown[]; values: Record<string, unknown[]>; wallTimes?: unknown[]; [k: string]: unknown };
  const keys = Object.keys(c.values);
  // biome-ignore lint/correctness/noPrecisionLoss: 1e400 is a literal past the float range on purpose
  const bad = [-1, 1.5, 2 ** 31, "3", null, true, Infinity, NaN, 1e400, {}, [], 0, 7];
  switch (Math.floor(rand() * 12)) {
    case 0:
      c.steps[Math.floor(rand() * c.steps.length)] = pick(bad);
      break;
    case 1:
      if (keys.length) c.values[pick(keys)][0] = pick(bad);
      break;
    case 2:
      if (keys.length) c.values[pick(keys)].push(1);
      break;
    case 3:
      c.wallTimes = c.steps.map(() => pick([1, 0, -1, "x", 2e9]));
      break;
    case 4:
      c.wallTimes = [1];
      break;
    case 5:
      c.values[pick(["bad key", "", "a".repeat(201), "ok/key", "ü"])] = c.steps.map(() => 1);
      break;
    case 6:
      c.extra = 1;
      break;
    case 7:
      c.batchId = pick(["", "a b", "x".repeat(129), 5, "ok"]);
      break;
    case 8:
      c.steps = [];
      break;
    case 9:
      c.values = pick([null, [], "x", {}]) as never;
      break;
    case 10:
      delete (c as Record<string, unknown>).values;
      break;
    default:
      break;
  }
  return c;
}

describe("metricColumnsLookValid", () => {
  it("accepts only what metricColumnsSchema accepts (3,000 random bodies, half with a defect)", () => {
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const body = i % 2 ? mutate(validBody()) : validBody();
      const fast = metricColumnsLookValid(body);
      const schema = metricColumnsSchema.safeParse(body).success;
      expect(fast, JSON.stringify(body)).toBe(schema);
      if (fast) accepted++;
    }
    expect(accepted).toBeGreaterThan(1500); // the valid half at least, so the agreement is not vacuous
  });
});

describe("columnar ingest", () => {
  const mk = (name: string) => createRun({ project: "test", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
  let cols = "";
  let pts = "";
  beforeAll(() => {
    cols = mk("columns");
    pts = mk("points");
  });

  it("stores what the same points logged one object per step store, appending or overwriting", () => {
    // forward batches (the append path), then an overlapping one and one with a step twice (point by point)
    const batches: { steps: number[]; values: Record<string, (number | null)[]> }[] = [];
    for (let start = 0; start < 6000; start += 1500) {
      const steps = Array.from({ length: 1500 }, (_, i) => start + i);
      batches.push({ steps, values: { "a/x": steps.map((s) => Math.sin(s / 90)), "b/y": steps.map((s) => (s % 3 ? s % 7 : null)) } });
    }
    batches.push({ steps: [4000, 10, 7000, 7000], values: { "a/x": [100, -100, 1, 2], "b/y": [null, 5, 6, null] } });
    batches.forEach((b, i) => {
      const wallTimes = b.steps.map((s) => 1.7e9 + s);
      expect(ingestMetrics(cols, { ...b, wallTimes, batchId: `c:${i}` }).status).toBe(201);
      const points = b.steps.map((step, j) => ({
        step,
        wallTime: wallTimes[j],
        values: Object.fromEntries(Object.entries(b.values).flatMap(([k, v]) => (v[j] === null ? [] : [[k, v[j] as number]]))),
      }));
      expect(ingestMetrics(pts, { points, batchId: `p:${i}` }).status).toBe(201);
    });
    // a retry is answered from the record, not stored again
    const again = ingestMetrics(cols, { ...batches[0], wallTimes: batches[0].steps.map((s) => 1.7e9 + s), batchId: "c:0" });
    expect(again.status).toBe(200);

    const metric = metricRows(cols);
    expect(metric.length).toBe(6001 + 4001); // a/x every step and 7000; b/y on 2 of 3 steps and 7000
    expect(metric.find((r) => r.key === "a/x" && r.step === 7000)?.value).toBe(2); // the later of a step given twice
    expect(metric.find((r) => r.key === "a/x" && r.step === 10)?.value).toBe(-100);
    expect(metric).toEqual(metricRows(pts));
    expect(metricRows(cols, "MetricRollup")).toEqual(metricRows(pts, "MetricRollup"));
    expect(listSeries(cols)).toEqual(listSeries(pts));
    const s = readSeries(cols, "a/x", { maxPoints: 100 });
    expect(s.values).toContain(100);
    expect(s.values).toContain(-100);
  });

  it("answers a bad value with a 400 naming its key and index", () => {
    // JSON.parse reads 1e400 as Infinity
    const bytes = new TextEncoder().encode(`{"steps":[1,2,3,4],"values":{"a/x":[1,2,3,4],"b/y":[1,null,1e400,4]}}`);
    const reply = handleIngest({ id: 1, kind: "metrics", runId: cols, bytes, databaseUrl: url }, getRawDb());
    expect(reply.ok).toBe(false);
    expect(reply.ok ? [] : reply.issues.map((i) => i.path)).toContain("body.values.b/y.2");
    const short = handleIngest(
      { id: 2, kind: "metrics", runId: cols, bytes: new TextEncoder().encode(JSON.stringify({ steps: [1, 2], values: { "a/x": [1] } })), databaseUrl: url },
      getRawDb(),
    );
    expect(short.ok ? null : short.issues[0]).toMatchObject({ path: "body.values.a/x", message: expect.stringContaining("steps has 2") });
  });

  it("answers a retried batch from its record and any change of content with a 409, also for a batch recorded with the older hash", () => {
    const run = mk("batch-hash");
    const body = { steps: [1, 2, 3], wallTimes: [1.7e9, 1.7e9 + 1, 1.7e9 + 2], values: { "a/x": [0.5, null, "NaN"], "b/y": [1, 2, "Infinity"] } } as const;
    const post = (b: object, batchId: string) => ingestMetrics(run, { ...b, batchId } as never);
    expect(post(body, "h:1").status).toBe(201);
    expect(post({ ...body }, "h:1").status).toBe(200);
    const changed = [
      { ...body, steps: [1, 2, 4] },
      { ...body, wallTimes: undefined },
      { ...body, wallTimes: [1.7e9, 1.7e9 + 1, 1.7e9 + 3] },
      { ...body, values: { ...body.values, "a/x": [0.5, 0, "NaN"] } }, // null and 0
      { ...body, values: { ...body.values, "a/x": [0.5, null, "Infinity"] } },
      { ...body, values: { ...body.values, "b/y": [1, 2, "-Infinity"] } },
      { ...body, values: { "a/x": body.values["a/x"] } },
      { ...body, values: { "a/x": body.values["a/x"], "b/z": body.values["b/y"] } },
    ];
    for (const b of changed) expect(() => post(b, "h:1")).toThrow(/already stored with other content/);
    // a batch recorded by a server before columnar batches had their own hash: sha256 of the content's JSON
    const { batchId: _, ...content } = { ...body, batchId: "h:2" };
    const old = createHash("sha256").update(JSON.stringify(content)).digest("hex");
    writeTransaction(null, (db) => recordBatch(run, "metrics:h:2", "metrics", old, { inserted: 6, replaced: 0 }, db));
    expect(post(body, "h:2")).toEqual({ status: 200, body: { inserted: 6, replaced: 0 } });
    expect(() => post(changed[0], "h:2")).toThrow(/already stored with other content/);
  });

  it("documents both shapes in one declared body schema", () => {
    expect(logMetricsSchema.safeParse({ steps: [1], values: { a: [1] } }).success).toBe(true);
    expect(logMetricsSchema.safeParse({ points: [{ step: 1, values: { a: 1 } }] }).success).toBe(true);
    expect(logMetricsSchema.safeParse({ steps: [1], points: [] }).success).toBe(false);
  });
});
