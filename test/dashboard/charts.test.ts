// The pure chart-preparation functions: EMA, diverging scale, series preparation, compare bands,
// config diff, heatmap anchor groups, keyboard moves, display tokens.
import { describe, expect, it } from "vitest";
import { debiasedEma } from "@/lib/charts/ema";
import { divergingColor, legendTicks, scalePosition, symmetricMax, textOn } from "@/lib/charts/diverging";
import { envStepKey, interpolate, prepareSeries } from "@/lib/charts/prepare-series";
import { aggregate, commonGrid, configDiff, flattenConfig, groupRuns, runField } from "@/lib/charts/prepare-compare";
import { anchorGroups, anchorSummary, diffMatrix, markerStyle, moveCell, stats } from "@/lib/charts/prepare-heatmap";
import { displayTokens, tokenCells, tokenTintMax } from "@/lib/charts/tokenize";
import { fmt, fmtDuration, fmtSigned } from "@/lib/charts/format";

describe("debiased EMA", () => {
  it("matches the hand-computed TensorBoard recurrence", () => {
    const w = 0.6;
    const v = [1, 2, 3];
    // last: 0.4, 0.4*0.6+0.8=1.04, 1.04*0.6+1.2=1.824; debias 0.4, 0.64, 0.784
    const want = [0.4 / 0.4, 1.04 / 0.64, 1.824 / 0.784];
    debiasedEma(v, w).forEach((x, i) => {
      expect(x).toBeCloseTo(want[i], 12);
    });
  });
  it("starts at the first value, is the identity at weight 0, and keeps a constant constant", () => {
    expect(debiasedEma([5, 7], 0.9)[0]).toBeCloseTo(5, 12);
    expect(debiasedEma([1, -2, 3], 0)).toEqual([1, -2, 3]);
    debiasedEma([2, 2, 2, 2, 2], 0.95).forEach((x) => {
      expect(x).toBeCloseTo(2, 12);
    });
  });
  it("leaves gaps as gaps and skips them in the average", () => {
    const out = debiasedEma([1, null, NaN, 3], 0.5);
    expect(out[1]).toBeNull();
    expect(out[2]).toBeNull();
    // same as smoothing [1, 3]
    expect(out[3]).toBeCloseTo(debiasedEma([1, 3], 0.5)[1]!, 12);
  });
  it("clamps a weight of 1 so the result stays finite", () => {
    expect(debiasedEma([1, 2, 3], 1).every((x) => x !== null && Number.isFinite(x))).toBe(true);
  });
});

describe("diverging scale", () => {
  it("is centred at zero, symmetric, clamped, and gives no colour to a missing value", () => {
    expect(divergingColor(0, 2)).toBe("#f7f7f7");
    expect(divergingColor(-2, 2)).toBe("#b2182b");
    expect(divergingColor(2, 2)).toBe("#2166ac");
    expect(divergingColor(50, 2)).toBe("#2166ac");
    expect(divergingColor(null, 2)).toBeNull();
    expect(divergingColor(NaN, 2)).toBeNull();
    expect(scalePosition(-1, 2)).toBe(-0.5);
    expect(scalePosition(1, 0)).toBe(0);
    expect(divergingColor(0, 2, "dark")).not.toBe(divergingColor(0, 2, "light"));
  });
  it("chooses readable text and a symmetric domain (max |v| or a percentile, 1 when empty)", () => {
    expect(textOn(0, 1)).toBe("#18181b");
    expect(textOn(-1, 1)).toBe("#fafafa");
    expect(symmetricMax([0.5, -3, null, 1])).toBe(3);
    expect(symmetricMax([])).toBe(1);
    expect(symmetricMax([0, 0])).toBe(1);
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    xs[99] = 1e6;
    expect(symmetricMax(xs, 98)).toBe(98);
    expect(legendTicks(2)).toEqual([-2, -1, 0, 1, 2]);
  });
});

describe("series preparation", () => {
  const s = { steps: [0, 1, 2, 3], values: [1, -1, 4, 2], wallTimes: [100, 101, 103, NaN] };
  it("uses steps, relative wall time, or an env-step counter for x", () => {
    expect(prepareSeries(s).points.map((p) => p.x)).toEqual([0, 1, 2, 3]);
    const wall = prepareSeries(s, { x: "wall" });
    expect(wall.points.map((p) => p.x)).toEqual([0, 1, 3]);
    expect(wall.droppedNoX).toBe(1);
    const env = prepareSeries(s, { x: "env", envSteps: { steps: [0, 2], values: [10, 30] } });
    expect(env.points.map((p) => p.x)).toEqual([10, 20, 30]); // step 1 interpolated, step 3 beyond the counter
    expect(env.droppedNoX).toBe(1);
  });
  it("smooths with the debiased EMA and hides non-positive values on a log scale as gaps", () => {
    const p = prepareSeries(s, { smoothing: 0.5 });
    expect(p.points.map((x) => x.ySmooth)).toEqual(debiasedEma(s.values, 0.5));
    const log = prepareSeries(s, { log: true });
    expect(log.points[1].y).toBeNull();
    expect(log.hiddenNonPositive).toBe(1);
    expect(prepareSeries(s).points.every((x) => x.ySmooth === null)).toBe(true);
  });
  it("interpolates without extrapolating and finds the env-step key", () => {
    expect(interpolate([0, 10], [0, 1], 5)).toBe(0.5);
    expect(interpolate([0, 10], [0, 1], 11)).toBeNull();
    expect(interpolate([0, 10], [0, null], 5)).toBeNull();
    expect(envStepKey(["a", "rollout/env_steps"])).toBe("rollout/env_steps");
    expect(envStepKey(["x/total_env_steps"])).toBe("x/total_env_steps");
    expect(envStepKey(["perf/env_steps_per_s"])).toBeNull();
  });
});

describe("compare: grouping, bands, config diff", () => {
  const runs = [
    { id: "a", name: "A", estimator: "gigpo", config: { lr: 1, opt: { beta: 0.9 } } },
    { id: "b", name: "B", estimator: "grpo", config: { lr: 1, opt: { beta: 0.99 } } },
    { id: "c", name: "C", estimator: "gigpo", config: { lr: 2 } },
  ];
  it("groups runs by a run column or a config path, in order of first appearance", () => {
    expect(groupRuns(runs, "estimator").map((g) => [g.label, g.runIds])).toEqual([
      ["estimator=gigpo", ["a", "c"]],
      ["estimator=grpo", ["b"]],
    ]);
    expect(groupRuns(runs, "config.opt.beta").map((g) => g.value)).toEqual(["0.9", "0.99", "(none)"]);
    expect(groupRuns(runs, null)).toHaveLength(3);
    expect(runField(runs[0], "config.opt.beta")).toBe(0.9);
  });
  it("draws mean and min-max / std / stderr bands over runs on a common grid, with gaps where no run has data", () => {
    const a = { x: [0, 1, 2], y: [0, 2, 4] };
    const b = { x: [0, 1, 2, 3], y: [2, 4, 6, 8] };
    const grid = commonGrid([a, b]);
    expect(grid).toEqual([0, 1, 2, 3]);
    const mm = aggregate([a, b], grid, "minmax");
    expect(mm.mean).toEqual([1, 3, 5, 8]);
    expect(mm.lo).toEqual([0, 2, 4, 8]);
    expect(mm.hi).toEqual([2, 4, 6, 8]);
    expect(mm.n).toEqual([2, 2, 2, 1]);
    const sd = aggregate([a, b], grid, "std");
    expect(sd.hi[0]! - sd.mean[0]!).toBeCloseTo(Math.SQRT2, 12); // sample std of {0, 2}
    const se = aggregate([a, b], grid, "stderr");
    expect(se.hi[0]! - se.mean[0]!).toBeCloseTo(1, 12);
    expect(aggregate([a], [5], "std").mean).toEqual([null]);
    // interpolation between stored points
    expect(aggregate([a], [0.5], "minmax").mean[0]).toBe(1);
  });
  it("uses an even grid for long series", () => {
    const long = { x: Array.from({ length: 5000 }, (_, i) => i), y: Array.from({ length: 5000 }, () => 1) };
    const g = commonGrid([long], 100);
    expect(g).toHaveLength(100);
    expect(g[0]).toBe(0);
    expect(g[99]).toBe(4999);
  });
  it("flattens configs and lists differing keys first", () => {
    expect(flattenConfig({ a: { b: 1, c: [1, 2] }, d: {} })).toEqual({ "a.b": 1, "a.c": [1, 2], d: {} });
    const diff = configDiff(runs);
    expect(diff.filter((r) => r.differs).map((r) => r.key)).toEqual(["config.lr", "config.opt.beta", "estimator"]);
    expect(diff.find((r) => r.key === "config.opt.beta")!.values).toEqual(["0.9", "0.99", "(none)"]);
  });
});

describe("heatmap preparation", () => {
  it("reports each anchor group's members and statistics; markers only for groups of 2+", () => {
    const ids = [
      [0, 1],
      [0, 2],
    ];
    const adv = [
      [1, 5],
      [3, null],
    ];
    const ret = [
      [0.5, 1],
      [1.5, 2],
    ];
    const gs = anchorGroups(ids, adv, { return: ret });
    expect(gs.map((g) => g.members.length)).toEqual([2, 1, 1]);
    expect(gs[0].advantage).toMatchObject({ mean: 2, n: 2, min: 1, max: 3 });
    expect(gs[0].advantage!.std).toBeCloseTo(Math.SQRT2, 12);
    expect(gs[0].extra.return!.mean).toBe(1);
    expect(gs[2].advantage).toBeNull(); // its only member has no value
    expect(gs.map((g) => g.marker)).toEqual([0, null, null]);
    expect(anchorSummary(gs)).toEqual({ count: 3, singletonRatio: 2 / 3, sizes: { 1: 2, 2: 1 } });
    expect(markerStyle(0)).toEqual({ shape: "circle", color: "#4e79a7" });
    expect(markerStyle(10).shape).toBe("square");
    expect(stats([])).toBeNull();
  });
  it("takes differences cell by cell with gaps, and moves a keyboard cursor inside ragged rows", () => {
    expect(diffMatrix([[1, 2, null]], [[0.5, null, 1]])).toEqual([[0.5, null, null]]);
    const m = { rowLengths: [3, 1] };
    expect(moveCell(m, { row: 0, col: 2 }, "ArrowDown")).toEqual({ row: 1, col: 0 });
    expect(moveCell(m, { row: 0, col: 2 }, "ArrowRight")).toEqual({ row: 0, col: 2 });
    expect(moveCell(m, { row: 1, col: 0 }, "ArrowUp")).toEqual({ row: 0, col: 0 });
    expect(moveCell(m, { row: 0, col: 0 }, "End")).toEqual({ row: 0, col: 2 });
    expect(moveCell(m, { row: 0, col: 1 }, "x")).toEqual({ row: 0, col: 1 });
  });
});

describe("display tokens and formatting", () => {
  it("splits words, punctuation and whitespace, and joins back to the text", () => {
    const text = "I move right. <action>right</action>\n  done, ok?";
    const toks = displayTokens(text);
    expect(toks.map((t) => t.text).join("")).toBe(text);
    expect(
      toks
        .filter((t) => !t.space)
        .map((t) => t.text)
        .slice(0, 6),
    ).toEqual(["I", "move", "right", ".", "<", "action"]);
    expect(
      displayTokens("héllo wörld")
        .filter((t) => !t.space)
        .map((t) => t.text),
    ).toEqual(["héllo", "wörld"]);
  });
  it("tints stored policy tokens by advantage, log-prob or entropy, with every value on hover", () => {
    const t = { ids: [7, 3, 9], texts: ["go", "", " left"], logprobs: [-0.5, -2, -0.01], advantages: null, entropies: [1.5, 0.2, 0] };
    const adv = tokenCells(t, "advantage", 0.25);
    expect(adv.map((c) => [c.text, c.id, c.value])).toEqual([
      ["go", 7, 0.25],
      ["⟨3⟩", 3, 0.25],
      [" left", 9, 0.25],
    ]);
    expect(adv[0].title).toBe('token 7 "go" · log-prob -0.500 (p 0.607) · entropy 1.500 · advantage +0.250');
    expect(tokenCells(t, "logprob", 0.25).map((c) => c.value)).toEqual([-0.5, -2, -0.01]);
    expect(tokenCells(t, "entropy", null).map((c) => c.value)).toEqual([1.5, 0.2, 0]);
    // per-token advantages win over the turn's; no texts stored: the id stands in
    const own = tokenCells({ ids: [1, 2], texts: null, logprobs: null, advantages: [1, -1], entropies: null }, "advantage", 0.5);
    expect(own.map((c) => [c.text, c.value, c.title])).toEqual([
      ["#1", 1, "token 1 · advantage +1.000"],
      ["#2", -1, "token 2 · advantage -1.000"],
    ]);
    expect(
      tokenTintMax(
        [
          { tokens: t, advantage: null },
          { tokens: null, advantage: 1 },
        ],
        "logprob",
      ),
    ).toBe(2);
    expect(tokenTintMax([{ tokens: null, advantage: 1 }], "entropy")).toBe(1);
  });
  it("formats numbers, signs, durations and ticks", async () => {
    expect(fmt(null)).toBe("—");
    expect(fmt(12345)).toBe("12.35K");
    expect(fmt(0.00001)).toBe("1.0e-5");
    expect(fmtSigned(0.5)).toBe("+0.500");
    expect(fmtSigned(-0.0001)).toBe("0.000");
    expect(fmtDuration(3725)).toBe("1h 02m");
    expect(fmtDuration(2.46, { decimals: 1 })).toBe("2.5s");
    expect(fmtDuration(75.4, { decimals: 1 })).toBe("1m 15s");
    expect(fmtDuration(3600, { round: true })).toBe("1h");
    expect(fmtDuration(3660, { round: true })).toBe("1h 01m");
    const { tickFormat } = await import("@/lib/charts/format");
    expect([1.878, 1.879, 1.88].map(tickFormat([1.878, 1.879, 1.88]))).toEqual(["1.878", "1.879", "1.880"]);
    expect([0, 0.5, 1].map(tickFormat([0, 0.5, 1]))).toEqual(["0", "0.5", "1.0"]);
    expect([0, 0.25, 0.75, 1].map(tickFormat([0, 0.25, 0.5, 0.75, 1]))).toEqual(["0", "0.25", "0.75", "1.00"]);
    expect([0, 20000, 40000].map(tickFormat([0, 20000, 40000]))).toEqual(["0", "20K", "40K"]);
    expect([-0.001, 0, 0.001].map(tickFormat([-0.001, -0.0005, 0, 0.0005, 0.001]))).toEqual(["-0.0010", "0", "0.0010"]);
  });
  it("labels a wall-time axis as precisely as its tick step, on steps a clock reads", async () => {
    const { durationTickFormat } = await import("@/lib/charts/format");
    const { durationTicksWithin } = await import("@/lib/charts/prepare-series");
    // a run of a few seconds: every label distinct (it read "0s 1s 1s 2s")
    const short = durationTicksWithin(0, 2.2);
    expect(short).toEqual([0, 0.5, 1, 1.5, 2]);
    expect(short.map(durationTickFormat(short))).toEqual(["0.0s", "0.5s", "1.0s", "1.5s", "2.0s"]);
    const tiny = durationTicksWithin(0, 0.31);
    expect(new Set(tiny.map(durationTickFormat(tiny))).size).toBe(tiny.length);
    expect(tiny.map(durationTickFormat(tiny))).toEqual(["0.0s", "0.1s", "0.2s", "0.3s"]);
    expect([0.05, 0.1].map(durationTickFormat([0, 0.05, 0.1]))).toEqual(["0.05s", "0.10s"]);
    // minutes and hours fall on 15 s, 5 min, 1 h … (not 40 s or 200 s)
    const minutes = durationTicksWithin(0, 170);
    expect(minutes).toEqual([0, 60, 120]);
    expect(minutes.map(durationTickFormat(minutes))).toEqual(["0s", "1m", "2m"]);
    expect(durationTicksWithin(0, 50)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(durationTicksWithin(0, 100)).toEqual([0, 30, 60, 90]);
    expect(durationTicksWithin(0, 4 * 3600).map(durationTickFormat([0, 3600]))).toEqual(["0s", "1h", "2h", "3h", "4h"]);
    expect([0, 90, 180].map(durationTickFormat([0, 30, 60]))).toEqual(["0s", "1m 30s", "3m"]);
    expect(durationTicksWithin(0, 10 * 86400)).toEqual([0, 172800, 345600, 518400, 691200, 864000]);
  });
});

describe("y domains", () => {
  it("pads the data, flattens floating-point noise around zero, clamps shares", async () => {
    const { paddedDomain } = await import("@/lib/charts/domain");
    expect(paddedDomain([0, 10])).toEqual([0, 10.5]);
    expect(paddedDomain([-10, 10])).toEqual([-11, 11]);
    expect(paddedDomain([4.8e-17, -3e-17, 1e-17])).toEqual([-1e-3, 1e-3]);
    expect(paddedDomain([5, 5])).toEqual([4.5, 5.5]);
    expect(paddedDomain([0.2, 1], [0, 1])).toEqual([0.16, 1]);
    expect(paddedDomain([null, NaN])).toBeNull();
  });
});

describe("nice axis scales", () => {
  it("widens to round bounds with round ticks", async () => {
    const { niceScale, niceStep } = await import("@/lib/charts/domain");
    expect(niceStep(0.18)).toBe(0.2);
    expect(niceStep(4)).toBe(5);
    expect(niceScale([0.111, 0.249], [0, 1])).toEqual({ domain: [0.1, 0.3], ticks: [0.1, 0.15, 0.2, 0.25, 0.3] });
    expect(niceScale([3.13, 3.52])!.ticks).toEqual([3.1, 3.2, 3.3, 3.4, 3.5, 3.6]);
    expect(niceScale([0, 1], [0, 1])).toEqual({ domain: [0, 1], ticks: [0, 0.2, 0.4, 0.6, 0.8, 1] });
    expect(niceScale([1000, 98000])!.domain).toEqual([0, 120000]);
    expect(niceScale([4e-17, -3e-17])!.domain).toEqual([-0.001, 0.001]);
  });
});

describe("chart scales", () => {
  it("gives x ticks inside the data (whole steps), a round y domain, and decade ticks on a log axis", async () => {
    const { chartScales, ticksWithin, logTicks } = await import("@/lib/charts/prepare-series");
    expect(ticksWithin(0, 79, true)).toEqual([0, 20, 40, 60]);
    expect(ticksWithin(0, 3, true)).toEqual([0, 1, 2, 3]);
    expect(ticksWithin(0.5, 1.5)).toEqual([0.6, 0.8, 1, 1.2, 1.4]);
    expect(logTicks(0.003, 20)).toEqual([0.01, 0.1, 1, 10]);
    expect(logTicks(2, 5)).toEqual([2, 5]);
    const pts = [0, 1, 2, 3].map((x) => ({ x, step: x, y: [1, -1, 4, 2][x], ySmooth: null }));
    const s = chartScales(pts, { x: "step" })!;
    expect(s.x).toEqual({ domain: [0, 3], ticks: [0, 1, 2, 3] });
    expect(
      chartScales(
        pts.map((p) => ({ ...p, x: p.x * 0.7 })),
        { x: "wall" },
      )!.x.ticks,
    ).toEqual([0, 0.5, 1, 1.5, 2]);
    expect(s.y.domain[0]).toBeLessThanOrEqual(-1);
    expect(s.y.domain[1]).toBeGreaterThanOrEqual(4);
    expect(chartScales(pts, { log: true })!.y.domain).toEqual([1, 4]);
    expect(chartScales([])).toBeNull();
  });
});
