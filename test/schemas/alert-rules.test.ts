// The default rules' definitions (lib/schemas/alerts.ts evaluateRule) on constructed series: the
// exact steps where clip ratio, KL growth and advantage drift hold, and none before the baseline.
import { describe, expect, it } from "vitest";
import { DEFAULT_ALERT_RULES, evaluateRule, quantiles, type SeriesPoint } from "@/lib/schemas/alerts";

const rule = (id: string) => DEFAULT_ALERT_RULES.find((r) => r.id === id)!;
const series = (n: number, f: (s: number) => number): SeriesPoint[] => Array.from({ length: n }, (_, step) => ({ step, value: f(step) }));
const holding = (id: string, pts: SeriesPoint[]) =>
  evaluateRule(rule(id), pts.slice(0, rule(id).k), pts, 0)
    .filter((v) => v.holds)
    .map((v) => v.step);

describe("default rules", () => {
  it("clip ratio high: from the first window of 5 whose mean passes 0.2", () => {
    // 0.05 until step 59, 0.5 from 60: the window 57-61 averages (3 x 0.05 + 2 x 0.5) / 5 = 0.23
    expect(
      holding(
        "clip-ratio-high",
        series(65, (s) => (s >= 60 ? 0.5 : 0.05)),
      ),
    ).toEqual([61, 62, 63, 64]);
  });

  it("KL accelerating: the window's mean at least twice the 5 before, once it reaches 0.01", () => {
    // 0.002 until step 19, 0.05 from 20: at 20 the window is (4 x 0.002 + 0.05) / 5 = 0.0116, 5.8x the one before;
    // at 27 it is 0.05 against (2 x 0.002 + 3 x 0.05) / 5 = 0.0308, 1.6x
    expect(
      holding(
        "kl-accelerating",
        series(30, (s) => (s >= 20 ? 0.05 : 0.002)),
      ),
    ).toEqual([20, 21, 22, 23, 24, 25, 26]);
  });

  it("advantage drift: W1 to the first 5 steps' distribution, in their std, averaged over 5 steps", () => {
    const base = Array.from({ length: 101 }, (_, i) => -1 + i / 50); // uniform on [-1, 1], std 0.58
    const std = Math.sqrt(base.reduce((a, x) => a + x * x, 0) / base.length);
    // shifted by +1 from step 10: W1 = 1 / 0.58 = 1.72 baseline std a step; 2 such steps in the window: 0.69 > 0.5
    const pts = Array.from({ length: 14 }, (_, step) => {
      const xs = step >= 10 ? base.map((x) => x + 1) : base;
      return { step, value: std, q: quantiles(xs)! };
    });
    expect(holding("advantage-drift", pts)).toEqual([11, 12, 13]);
    // a step without quantiles (a summary kept before they were) is not evaluated
    const gap = pts.map((p, i) => (i === 11 ? { step: p.step, value: p.value } : p));
    expect(holding("advantage-drift", gap)).toEqual([]);
  });

  it("say nothing while the window overlaps the baseline", () => {
    // entropy halved from step 5: trend windows start at step 5 (steps 5-9 is the first, at step 9)
    expect(
      holding(
        "entropy-falling",
        series(12, (s) => (s >= 5 ? 0.1 : 1)),
      ),
    ).toEqual([9, 10, 11]);
  });
});
