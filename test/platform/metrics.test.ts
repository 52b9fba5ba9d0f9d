// Metric storage and downsampling against a real SQLite file, checked against brute force.
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("metrics");
const { writeMetrics, truncateMetricsAfter } = await import("@/lib/db/metric-writes");
const { readSeries, chooseStride, listSeries } = await import("@/lib/db/metric-series");
const { metricChunks } = await import("@/lib/db/metric-export");
const { writeTransaction } = await import("@/lib/db/raw");
const { metricRows } = await import("../helpers/metric-rows");
const { createRun } = await import("@/lib/db/runs");
const { mergeSeries } = await import("@/lib/charts/series-merge");

/** What the downsampler must return, computed from the raw points the slow, obvious way. */
function bruteForce(points: Map<number, number>, maxPoints: number) {
  const steps = [...points.keys()].sort((a, b) => a - b);
  const stride = chooseStride(steps[0], steps[steps.length - 1], maxPoints);
  if (stride === 1) return { stride, steps, values: steps.map((s) => points.get(s)!) };
  const buckets = new Map<number, number[]>();
  for (const s of steps) {
    const b = Math.floor(s / stride);
    if (!buckets.has(b)) buckets.set(b, []);
    buckets.get(b)!.push(s);
  }
  const out: [number, number][] = [];
  for (const [, ss] of [...buckets].sort((a, b) => a[0] - b[0])) {
    let mn = ss[0],
      mx = ss[0];
    for (const s of ss) {
      if (points.get(s)! < points.get(mn)!) mn = s;
      if (points.get(s)! > points.get(mx)!) mx = s;
    }
    if (mn === mx) out.push([mn, points.get(mn)!]);
    else for (const s of [Math.min(mn, mx), Math.max(mn, mx)]) out.push([s, points.get(s)!]);
  }
  if (out[0][0] !== steps[0]) out.unshift([steps[0], points.get(steps[0])!]);
  const last = steps[steps.length - 1];
  if (out[out.length - 1][0] !== last) out.push([last, points.get(last)!]);
  return { stride, steps: out.map((p) => p[0]), values: out.map((p) => p[1]) };
}

let runId = "";
beforeAll(() => {
  runId = createRun({ project: "test", name: "metrics", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
});

describe("chooseStride", () => {
  it("is 1 while raw points fit, then the smallest power of two that fits", () => {
    expect(chooseStride(0, 99, 1500)).toBe(1);
    expect(chooseStride(0, 1499, 1500)).toBe(1);
    const s = chooseStride(0, 999_999, 1500);
    expect(Math.log2(s) % 1).toBe(0);
    expect(2 * (Math.floor(999_999 / s) + 1) + 2).toBeLessThanOrEqual(1500);
    expect(2 * (Math.floor(999_999 / (s / 2)) + 1) + 2).toBeGreaterThan(1500);
  });
  it("never decreases as a run grows (live charts do not jump)", () => {
    let prev = 1;
    for (let last = 0; last < 200_000; last += 997) {
      const s = chooseStride(0, last, 1500);
      expect(s).toBeGreaterThanOrEqual(prev);
      prev = s;
    }
  });
});

describe("writeMetrics + readSeries", () => {
  it("matches brute-force min/max buckets at every level, with overwrites", () => {
    const truth = new Map<number, number>();
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    // 70,000 steps with gaps, written in uneven batches, some steps overwritten later.
    for (let start = 0; start < 70_000; start += 5_000) {
      const pts = [];
      for (let s = start; s < start + 5_000; s++) {
        if (s % 7 === 3) continue;
        const v = Math.sin(s / 500) + rand();
        truth.set(s, v);
        pts.push({ key: "loss", step: s, value: v, wallTime: 1000 + s });
      }
      writeMetrics(runId, pts);
    }
    const overwrite = [11, 4_097, 65_536, 69_990].map((s) => ({ key: "loss", step: s, value: 100 + s, wallTime: 1 }));
    for (const p of overwrite) truth.set(p.step, p.value);
    expect(writeMetrics(runId, overwrite)).toEqual({ inserted: 0, replaced: 4 });
    // each point's wall time: stored beside each bucket's min and max point (MetricRollup), or its Metric row
    const wallTimeOf = (s: number) => (overwrite.some((p) => p.step === s) ? 1 : 1000 + s);

    // strides 8192 ... 1: between the stored levels (groups of 2-8 rollup rows or raw rows), and on them (50, 800 and 10,000 points: 4096, 256, 16, each rollup row a group)
    for (const maxPoints of [20, 50, 100, 800, 1500, 5000, 10_000, 100_000]) {
      const got = readSeries(runId, "loss", { maxPoints });
      const want = bruteForce(truth, maxPoints);
      expect(got.stride).toBe(want.stride);
      expect(got.steps).toEqual(want.steps);
      expect(got.values).toEqual(want.values);
      expect(got.wallTimes).toEqual(want.steps.map(wallTimeOf));
      expect(got.steps.length).toBeLessThanOrEqual(maxPoints);
      const onLevel = new Map([
        [50, 4096],
        [800, 256],
        [10_000, 16],
      ]).get(maxPoints);
      if (onLevel) expect(got.stride).toBe(onLevel);
    }
    const info = listSeries(runId).find((k) => k.key === "loss")!;
    expect(info.count).toBe(truth.size);
    expect(info.maxValue).toBe(Math.max(...truth.values()));
    expect(info.lastStep).toBe(69_999);
    expect(info.lastValue).toBe(truth.get(69_999));
    // Export is full resolution.
    expect([...metricChunks(runId, ["loss"], 7)].flat().length).toBe(truth.size);
  });

  it("live polling by cursor reproduces a full fetch", () => {
    const key = "live/reward";
    let client: ReturnType<typeof mergeSeries> | undefined;
    for (let round = 0; round < 30; round++) {
      const pts = Array.from({ length: 137 }, (_, i) => {
        const step = round * 137 + i;
        return { key, step, value: Math.cos(step / 40) * (step % 13), wallTime: step };
      });
      writeMetrics(runId, pts);
      const cursor = client?.steps.length ? { after: client.steps[client.steps.length - 1], stride: client.stride } : {};
      const res = readSeries(runId, key, { maxPoints: 300, ...cursor });
      client = mergeSeries(client, res);
      const full = readSeries(runId, key, { maxPoints: 300 });
      expect(client.steps).toEqual(full.steps);
      expect(client.values).toEqual(full.values);
    }
    // The stride changed along the way and the client followed it.
    expect(client!.stride).toBeGreaterThan(1);
  });

  it("truncation after a step (resumed training) leaves exactly what writing up to that step gives", () => {
    const mk = (name: string) => createRun({ project: "test", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    const [cut, whole] = [mk("truncated"), mk("reference")];
    const pts = (n: number) =>
      Array.from({ length: n }, (_, s) => [
        { key: "a", step: s, value: Math.sin(s / 300) * (s % 17), wallTime: s },
        { key: "b", step: s, value: s % 5, wallTime: s },
      ]).flat();
    writeMetrics(cut, pts(70_000));
    writeTransaction(null, (db) => truncateMetricsAfter(cut, 40_999, db));
    writeMetrics(whole, pts(41_000));
    for (const key of ["a", "b"])
      for (const maxPoints of [50, 1500, 100_000]) {
        const got = readSeries(cut, key, { maxPoints });
        const want = readSeries(whole, key, { maxPoints });
        expect([got.stride, got.steps, got.values]).toEqual([want.stride, want.steps, want.values]);
      }
    expect(metricRows(cut, "MetricRollup")).toEqual(metricRows(whole, "MetricRollup"));
    expect(listSeries(cut)).toEqual(listSeries(whole));
  });

  it("finds each key's series in one statement whatever characters the key holds", () => {
    const keys = ['a"b', "c\\d", "e,f", "{g}", "h i", "NULL", "train/loss"];
    for (let round = 0; round < 2; round++)
      writeMetrics(
        runId,
        keys.map((key, i) => ({ key, step: 900_000 + round, value: i + round, wallTime: 1 })),
      );
    const got = listSeries(runId).filter((k) => keys.includes(k.key));
    expect(got.map((k) => [k.key, k.count, k.lastValue]).sort()).toEqual(keys.map((key, i) => [key, 2, i + 1]).sort());
  });

  it("returns an empty series for an unknown key", () => {
    expect(readSeries(runId, "nope")).toMatchObject({ count: 0, steps: [] });
  });
});

describe("non-finite values (NaN, ±Infinity)", () => {
  const mk = (name: string) => createRun({ project: "test", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;

  it("are kept beside the series: summaries and rollups stay finite, reads and exports name them", () => {
    const run = mk("nan-loss");
    const got = writeMetrics(run, [
      { key: "loss", step: 0, value: 1.5, wallTime: 1 },
      { key: "loss", step: 1, value: NaN, wallTime: 2 },
      { key: "loss", step: 2, value: 0.5, wallTime: 3 },
      { key: "ratio", step: 1, value: Infinity, wallTime: 2 },
      { key: "ratio", step: 2, value: -Infinity, wallTime: 3 },
    ]);
    expect(got).toEqual({ inserted: 5, replaced: 0 });
    expect(listSeries(run)).toEqual([{ key: "loss", count: 2, firstStep: 0, lastStep: 2, lastValue: 0.5, minValue: 0.5, maxValue: 1.5 }]);
    const s = readSeries(run, "loss");
    expect([s.steps, s.values, s.nonFinite]).toEqual([[0, 2], [1.5, 0.5], [{ step: 1, value: "NaN" }]]);
    expect(readSeries(run, "ratio").nonFinite).toEqual([
      { step: 1, value: "Infinity" },
      { step: 2, value: "-Infinity" },
    ]);
    const want = [
      ["loss", 0, "1.5"],
      ["loss", 1, "NaN"],
      ["loss", 2, "0.5"],
      ["ratio", 1, "Infinity"],
      ["ratio", 2, "-Infinity"],
    ];
    // in step order whatever the chunk size (a chunk of 1 puts the NaN between two chunks)
    for (const size of [20_000, 1]) expect([...metricChunks(run, null, size)].flat().map((r) => [r[0], r[1], String(r[2])])).toEqual(want);
  });

  it("a later value at the step replaces the earlier one, either way, and rollups follow", () => {
    const run = mk("replace");
    writeMetrics(run, [
      { key: "x", step: 0, value: 2, wallTime: 1 },
      { key: "x", step: 1, value: NaN, wallTime: 1 },
      { key: "x", step: 2, value: 9, wallTime: 1 },
    ]);
    expect(writeMetrics(run, [{ key: "x", step: 1, value: 4, wallTime: 2 }])).toEqual({ inserted: 0, replaced: 1 });
    expect(readSeries(run, "x").nonFinite).toBeUndefined();
    expect(readSeries(run, "x").values).toEqual([2, 4, 9]);
    expect(writeMetrics(run, [{ key: "x", step: 2, value: Infinity, wallTime: 3 }])).toEqual({ inserted: 0, replaced: 1 });
    const s = readSeries(run, "x");
    expect([s.steps, s.values, s.nonFinite]).toEqual([[0, 1], [2, 4], [{ step: 2, value: "Infinity" }]]);
    expect(listSeries(run)[0]).toMatchObject({ count: 2, lastStep: 1, lastValue: 4, maxValue: 4 });
    const reference = mk("replace-reference");
    writeMetrics(reference, [
      { key: "x", step: 0, value: 2, wallTime: 1 },
      { key: "x", step: 1, value: 4, wallTime: 2 }, // the replacing write's wall time
    ]);
    expect(metricRows(run, "MetricRollup")).toEqual(metricRows(reference, "MetricRollup"));
  });
});
