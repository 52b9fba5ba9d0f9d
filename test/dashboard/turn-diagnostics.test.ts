// Turn-level diagnostics over training (lib/charts/turn-diagnostics.ts) on a hand-computed table.
import { describe, expect, it } from "vitest";
import { turnDiagnostics } from "@/lib/charts/turn-diagnostics";

describe("turnDiagnostics", () => {
  // two steps, three turn indices; step 1: 4 trajectories, 2 reach turn 2, 1 reaches turn 3
  const d = {
    steps: [0, 10],
    turns: 3,
    mean: [
      [0.5, -1, 2],
      [0.2, null, null],
    ],
    meanAbs: [
      [0.5, 1, 2],
      [0.4, null, null],
    ],
    count: [
      [4, 2, 1],
      [4, 0, 0],
    ],
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
    const withH = {
      ...d,
      entropy: [
        [1.2, 0.6, 0],
        [0.9, null, null],
      ],
    };
    const [t1, t2, t3] = turnDiagnostics(withH);
    expect(t1.entropy).toEqual([1.2, 0.9]);
    expect(t2.entropy).toEqual([0.6, null]);
    expect(t3.entropy).toEqual([0, null]);
    // (0.6*2 + 0*1) / 3
    expect(turnDiagnostics(withH, 1)[1].entropy[0]).toBeCloseTo(0.4);
    expect(turnDiagnostics(d)[0].entropy).toEqual([null, null]);
  });
});

describe("turnGrid (the turn x step heatmap)", async () => {
  const { turnGrid } = await import("@/components/credit/turn-grid");
  const { TURN_LINES } = await import("@/lib/charts/turn-diagnostics");
  // 2 steps x 8 turn indices: every index past TURN_LINES keeps its own column
  const d = {
    steps: [0, 5],
    turns: 8,
    mean: [
      [0.5, -1, 2, 0, 0.25, -0.5, 1, -2],
      [0.2, 0.1, null, null, null, null, null, null],
    ],
    meanAbs: [
      [0.5, 1, 2, 0, 0.25, 0.5, 1, 2],
      [0.4, 0.1, null, null, null, null, null, null],
    ],
    count: [
      [8, 8, 6, 6, 4, 4, 2, 1],
      [4, 2, 0, 0, 0, 0, 0, 0],
    ],
    entropy: [
      [1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3],
      [null, null, null, null, null, null, null, null],
    ],
  };

  it("gives every turn index its own column for each diagnostic", () => {
    const share = turnGrid(d, "creditShare");
    // step 0 |A| mass: 4 + 8 + 12 + 0 + 1 + 2 + 2 + 2 = 31
    expect(share[0]).toHaveLength(8);
    [4, 8, 12, 0, 1, 2, 2, 2].forEach((m, t) => {
      expect(share[0][t]).toBeCloseTo(m / 31, 12);
    });
    expect(share[0].reduce((a, v) => a! + v!, 0)).toBeCloseTo(1, 12);
    // step 5: 1.6 + 0.2 = 1.8; turns nobody reached are gaps, not zeros
    expect(share[1][0]).toBeCloseTo(1.6 / 1.8, 12);
    expect(share[1].slice(2)).toEqual([null, null, null, null, null, null]);
    expect(turnGrid(d, "meanAdvantage")[0]).toEqual(d.mean[0]);
    expect(turnGrid(d, "reach")[0]).toEqual([1, 1, 0.75, 0.75, 0.5, 0.5, 0.25, 0.125]);
    expect(turnGrid(d, "reach")[1]).toEqual([1, 0.5, 0, 0, 0, 0, 0, 0]);
    expect(turnGrid(d, "entropy")[0][7]).toBe(0.3);
    expect(turnGrid(d, "entropy")[1][0]).toBeNull();
  });

  it("agrees with the line charts on the turns they draw one by one", () => {
    const lines = turnDiagnostics(d);
    for (const k of ["creditShare", "meanAdvantage", "reach", "entropy"] as const) {
      const grid = turnGrid(d, k);
      for (let t = 0; t < TURN_LINES; t++)
        d.steps.forEach((_, s) => {
          expect(grid[s][t]).toEqual(lines[t][k][s] === null ? null : expect.closeTo(lines[t][k][s]!, 12));
        });
    }
  });
});

describe("estimateTurnHeight (the virtual turn list's row estimate)", async () => {
  const { estimateTurnHeight, wrappedLines } = await import("@/components/trajectories/turn-height");
  it("counts wrapped lines", () => {
    expect(wrappedLines("", 80)).toBe(1);
    expect(wrappedLines("a".repeat(80), 80)).toBe(1);
    expect(wrappedLines("a".repeat(81), 80)).toBe(2);
    expect(wrappedLines("x\n\ny", 80)).toBe(3);
  });
  it("grows with the texts, caps the observation box, and shrinks lines as the list widens", () => {
    const short = estimateTurnHeight({ observation: "You see a mug.", action: "go to desk 1" }, 900, false);
    const alf = estimateTurnHeight(
      {
        observation: ("You arrive at countertop 1. On it you see a mug 1, a knife 2. ".repeat(4) + "\n").repeat(4),
        action: "Think: ...\nAction: go to desk 1",
      },
      900,
      false,
    );
    const huge = estimateTurnHeight({ observation: "line\n".repeat(500), action: "go" }, 900, false);
    expect(short).toBeGreaterThan(100);
    expect(alf).toBeGreaterThan(short + 100);
    // the observation box stops at 288 px (it scrolls inside)
    expect(huge - short).toBeLessThanOrEqual(288 + 18);
    const narrow = estimateTurnHeight({ observation: "word ".repeat(300), action: "go" }, 500, false);
    const wide = estimateTurnHeight({ observation: "word ".repeat(300), action: "go" }, 1400, false);
    expect(narrow).toBeGreaterThan(wide);
    // tinted tokens are 24 px lines and not capped
    expect(estimateTurnHeight({ observation: "o", action: "tok ".repeat(400) }, 900, true)).toBeGreaterThan(
      estimateTurnHeight({ observation: "o", action: "tok ".repeat(400) }, 900, false),
    );
  });
});
