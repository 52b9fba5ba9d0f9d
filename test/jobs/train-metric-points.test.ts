// The run page of a finished train run showed empty panels for perf/optimizer_steps,
// perf/rollout_seconds, perf/step_seconds, perf/tokens_per_s, perf/update_seconds, ... The series
// were stored (this file checks it: every key a real train job lists has finite points, readable
// at the chart's resolution); the panels were placeholders: the page sent the points of its first
// 24 keys in key order (credit/*, eval/*, losses/*, some perf/*) and mounted the rest only when
// scrolled to, so an unscrolled page (a full-page screenshot, a print) kept them blank. Now the
// page prefetches in the order it shows the charts, by a points budget that covers a train run's
// every key, and a key with nothing to draw is listed compactly (components/charts/run-chart-plan.ts).
// The browser side: test/e2e/run-charts.spec.ts.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const db = useTempDatabase("train-metric-points");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { getRun } = await import("../../lib/db/runs");
const { listSeries, readSeries } = await import("../../lib/db/metric-series");
const { metricSteps } = await import("../helpers/metric-rows");
const { CHART_POINTS, PREFETCH_CHARTS } = await import("../../lib/charts/prepare-series");
const { chartOrder, nothingToDraw, prefetchedKeys, PREFETCH_MAX_CHARTS } = await import("../../components/charts/run-chart-plan");

afterEach(killAllWorkers);
afterAll(() => db.cleanup());

const info = (key: string, count: number, extra: Partial<{ firstStep: number; lastStep: number; minValue: number; maxValue: number }> = {}) => ({
  key,
  count,
  firstStep: 0,
  lastStep: count - 1,
  lastValue: 1,
  minValue: 0,
  maxValue: 1,
  ...extra,
});

describe("a finished train run's metric keys", () => {
  it("every key it lists has finite points the chart reads, and the run page draws all of them from its HTML", async () => {
    const { runId } = await launchRun(
      launchRunSchema.parse({
        jobKind: "train",
        name: "metric-points",
        config: {
          estimator: "gigpo",
          steps: 4,
          groupsPerStep: 2,
          groupSize: 4,
          evalInterval: 2,
          evalEpisodes: 8,
          checkpointInterval: 2,
          threads: 1,
          exportOnnx: false,
          // every step updates (zero advantages kept), whether or not an untrained episode succeeds: the update's keys are there
          dropZeroAdvantage: false,
        },
      }),
    );
    const w = spawnWorker();
    await waitFor("run finished", () => ["succeeded", "failed", "canceled"].includes(getRun(runId).status), 120_000, 200);
    expect(getRun(runId).status, w.output()).toBe("succeeded");

    const keys = listSeries(runId);
    const names = keys.map((k) => k.key);
    // the panels of the report, among others
    expect(names).toEqual(
      expect.arrayContaining([
        "perf/optimizer_steps",
        "perf/rollout_seconds",
        "perf/step_seconds",
        "perf/tokens_per_s",
        "perf/update_seconds",
        "perf/update_seconds_total",
      ]),
    );
    for (const k of keys) {
      const s = readSeries(runId, k.key, { maxPoints: CHART_POINTS });
      expect(s.steps.length, k.key).toBeGreaterThan(0);
      expect(s.steps.length, k.key).toBe(metricSteps(runId, k.key).length);
      expect(s.values.every(Number.isFinite), k.key).toBe(true);
      expect(s.nonFinite ?? [], k.key).toEqual([]);
      expect(nothingToDraw(k, { x: "step", log: false }, null), k.key).toBeNull();
    }
    // every step's timings are stored (the update's own only where the step had samples to train on)
    for (const k of ["perf/rollout_seconds", "perf/step_seconds", "perf/tokens_per_s", "perf/update_seconds_total"])
      expect(metricSteps(runId, k), k).toEqual([0, 1, 2, 3]);

    // More keys than the old 24-chart prefetch, all of them in the page's HTML now, in the order shown.
    expect(keys.length).toBeGreaterThan(PREFETCH_CHARTS);
    expect(prefetchedKeys(keys)).toEqual(chartOrder(keys));
    expect(new Set(chartOrder(keys))).toEqual(new Set(names));
    expect(chartOrder(keys)[0]).toMatch(/^eval\//);
  }, 150_000);

  it("prefetch: in display order within a points budget; at least the first screens of long series, at most PREFETCH_MAX_CHARTS", () => {
    const long = Array.from({ length: 40 }, (_, i) => info(`perf/k${String(i).padStart(2, "0")}`, 100_000)).concat([info("eval/success", 100_000)]);
    const p = prefetchedKeys(long);
    expect(p).toHaveLength(PREFETCH_CHARTS);
    expect(p[0]).toBe("eval/success"); // the section shown first, whatever the key order
    const short = Array.from({ length: 200 }, (_, i) => info(`m/k${String(i).padStart(3, "0")}`, 3));
    expect(prefetchedKeys(short)).toHaveLength(PREFETCH_MAX_CHARTS);
    // a 200-step train run (~36 keys, some logged only at update steps) fits
    const run200 = Array.from({ length: 30 }, (_, i) => info(`a/k${i}`, 200)).concat(Array.from({ length: 6 }, (_, i) => info(`losses/k${i}`, 60)));
    expect(prefetchedKeys(run200)).toHaveLength(36);
  });

  it("nothing to draw: no finite point, nothing above 0 on a log scale, no env steps at its steps", () => {
    const env = info("perf/env_steps", 10, { firstStep: 0, lastStep: 9 });
    expect(nothingToDraw(info("a", 0), { x: "step", log: false }, null)).toBe("no finite points");
    expect(nothingToDraw(info("eval/train_overlap", 5, { minValue: 0, maxValue: 0 }), { x: "step", log: true }, null)).toBe("all 0 on a log scale");
    expect(nothingToDraw(info("credit/adv_min", 5, { minValue: -2, maxValue: -1 }), { x: "step", log: true }, null)).toBe("nothing above 0 on a log scale");
    expect(nothingToDraw(info("eval/final", 1, { firstStep: 10, lastStep: 10 }), { x: "env", log: false }, env)).toBe("no env-step count at step 10");
    expect(nothingToDraw(info("eval/late", 2, { firstStep: 12, lastStep: 14 }), { x: "env", log: false }, env)).toBe("no env-step count at steps 12–14");
    expect(nothingToDraw(info("eval/final", 2, { firstStep: 0, lastStep: 10 }), { x: "env", log: false }, env)).toBeNull();
    expect(nothingToDraw(info("eval/final", 1, { firstStep: 10, lastStep: 10 }), { x: "step", log: false }, env)).toBeNull();
    expect(nothingToDraw(info("x", 3, { minValue: -1, maxValue: 2 }), { x: "step", log: true }, null)).toBeNull();
  });
});
