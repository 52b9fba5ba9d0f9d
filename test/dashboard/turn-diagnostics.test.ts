// Turn-level diagnostics over training (lib/charts/turn-diagnostics.ts) on a hand-computed table.
import { describe, expect, it } from "vitest";
import { turnDiagnostics } from "@/lib/charts/turn-diagnostics";

describe("turnDiagnostics", () => {
  // two steps, three turn indices; step 1: 4 trajectories, 2 reach turn 2, 1 reaches turn 3
  const d = {
    steps: [0, 10],
    turns: 3,
    mean: [[0.5, -1, 2], [0.2, null, null]],
    meanAbs: [[0.5, 1, 2], [0.4, null, null]],
    count: [[4, 2, 1], [4, 0, 0]],
  };

  it("credit share is each turn's share of the step's |A| mass; reach is the share still running", () => {
    const [t1, t2, t3] = turnDiagnostics(d);
    // step 0 |A| mass: 0.5*4=2, 1*2=2, 2*1=2 -> a third each
    expect(t1.creditShare[0]).toBeCloseTo(1 / 3);
    expect(t2.creditShare[0]).toBeCloseTo(1 / 3);
    expect(t3.creditShare[0]).toBeCloseTo(1 / 3);
    // step 10: every trajectory ends after turn 1, which takes all the credit
    expect(t1.creditShare[1]).toBe(1);
    expect(t2.creditShare[1]).toBeNull();
    expect(t2.reach).toEqual([0.5, 0]);
    expect(t3.reach).toEqual([0.25, 0]);
    expect(t1.meanAdvantage).toEqual([0.5, 0.2]);
  });

  it("later turns are pooled into one line (count-weighted mean advantage)", () => {
    const lines = turnDiagnostics(d, 1);
    expect(lines.map((l) => l.label)).toEqual(["turn 1", "turns ≥ 2"]);
    // (-1*2 + 2*1) / 3 = 0
    expect(lines[1].meanAdvantage[0]).toBeCloseTo(0);
    expect(lines[1].creditShare[0]).toBeCloseTo(2 / 3);
  });

  it("mean token entropy per turn index, count-weighted when pooled; null without stored entropies", () => {
    const withH = { ...d, entropy: [[1.2, 0.6, 0], [0.9, null, null]] };
    const [t1, t2, t3] = turnDiagnostics(withH);
    expect(t1.entropy).toEqual([1.2, 0.9]);
    expect(t2.entropy).toEqual([0.6, null]);
    expect(t3.entropy).toEqual([0, null]);
    // (0.6*2 + 0*1) / 3
    expect(turnDiagnostics(withH, 1)[1].entropy[0]).toBeCloseTo(0.4);
    expect(turnDiagnostics(d)[0].entropy).toEqual([null, null]);
  });
});
