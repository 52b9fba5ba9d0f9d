// Critic-based estimators: GAE (verl / legacy / RAGEN bi-level), HiPER, ArCHer. Hand-computed.
import { describe, expect, it } from "vitest";
import { advOf, compOf, expectClose, mkBatch, run } from "./helpers";

// one trajectory: t0 (r 0, V 0.5), t1 masked (tokens 0; r 0, V 0.2), t2 (r 1, V 0.8)
const masked = () =>
  mkBatch({
    g: {
      a: [
        { reward: 0, value: 0.5 },
        { reward: 0, value: 0.2, tokens: 0 },
        { reward: 1, value: 0.8 },
      ],
    },
  });

describe("GAE", () => {
  it("verl: next value and running advantage carried through a masked turn", () => {
    const res = run("gae", masked(), { gamma: 0.9, lam: 0.8, whiten: false });
    // t2: d = 1 - 0.8 = 0.2 ; t1 masked: carries 0.2 ; t0: d = 0.9*0.8 - 0.5 = 0.22, A = 0.22 + 0.72*0.2
    expectClose(advOf(res).a, [0.364, 0.2, 0.2], 12);
    expectClose(compOf(res, "returns").a as number[], [0.864, 0.4, 1.0], 12);
  });
  it("legacy: the masked turn's value and TD error are used", () => {
    const res = run("gae", masked(), { gamma: 0.9, lam: 0.8, whiten: false, variant: "legacy" });
    // t1: d = 0.9*0.8 - 0.2 = 0.52, A = 0.52 + 0.72*0.2 = 0.664 ; t0: d = 0.9*0.2 - 0.5 = -0.32, A = -0.32 + 0.72*0.664
    expectClose(advOf(res).a, [-0.32 + 0.72 * 0.664, 0.664, 0.2], 12);
  });
  it("whitening is token-weighted: a masked turn does not enter the statistics and gets 0", () => {
    const res = run("gae", masked(), { gamma: 0.9, lam: 0.8 });
    const m = (0.364 + 0.2) / (2 + 1e-8);
    const v = (((0.364 - m) ** 2 + (0.2 - m) ** 2) / (2 + 1e-8)) * 2;
    const w = (x: number) => (x - m) / Math.sqrt(v + 1e-8);
    // masked turn: 0 (verl masks it out of the loss), its raw GAE kept in the component
    expectClose(advOf(res).a, [w(0.364), 0, w(0.2)], 10);
    expectClose(compOf(res, "gae").a as number[], [0.364, 0.2, 0.2], 12);
    expect(res.diagnostics.masked).toEqual({ turns: 1 });
  });
  it("RAGEN bi-level: turn-level GAE with high_level_gamma; the turn-end token carries A_k", () => {
    const b = mkBatch({
      g: {
        a: [
          { reward: 0, value: 0.5 },
          { reward: 0, value: 0.2 },
          { reward: 1, value: 0.8 },
        ],
      },
    });
    const res = run("gae", b, { variant: "ragen_bilevel", highLevelGamma: 0.95, lam: 1, whiten: false });
    // t2: 0.2 ; t1: 0.95*0.8 - 0.2 + 0.95*0.2 = 0.75 ; t0: 0.95*0.2 - 0.5 + 0.95*0.75 = 0.4025
    expectClose(advOf(res).a, [0.4025, 0.75, 0.2], 12);
  });
  it("verl defaults gamma = lam = 1: A_t = sum of later rewards - V_t", () => {
    const b = mkBatch({
      g: {
        a: [
          { reward: 1, value: 0.3 },
          { reward: 2, value: 0.1 },
        ],
      },
    });
    expectClose(advOf(run("gae", b, { whiten: false })).a, [3 - 0.3, 2 - 0.1], 12);
  });
});

describe("HiPER", () => {
  // segments [0, 0, 1]; r = [0, 1, 2]; V_low = [0.5, 0.6, 0.7]; V_high at segment starts: 1.0, 1.5
  const b = () =>
    mkBatch({
      g: {
        a: [
          { reward: 0, value: 0.5, segment: 0, highValue: 1.0 },
          { reward: 1, value: 0.6, segment: 0 },
          { reward: 2, value: 0.7, segment: 1, highValue: 1.5 },
        ],
      },
    });
  const res = run("hiper", b(), { gamma: 0.9, lamTurn: 0.8, lamSeg: 0.5 });
  it("low level: GAE inside each segment, bootstrapping to the next segment's high value", () => {
    // t1: 1 + 0.9*1.5 - 0.6 = 1.75 ; t0: 0.9*0.6 - 0.5 + 0.72*1.75 = 1.3 ; t2: 2 - 0.7 = 1.3
    expectClose(advOf(res).a, [1.3, 1.75, 1.3], 12);
  });
  it("high level: SMDP GAE over segments, gamma^{d_k}", () => {
    // seg1: 2 - 1.5 = 0.5 ; seg0: 0.9 + 0.81*1.5 - 1.0 + 0.81*0.5*0.5 = 1.3175
    const high = compOf(res, "high").a;
    expect(high[0]).toBeCloseTo(1.3175, 12);
    expect(high[1]).toBeNull();
    expect(high[2]).toBeCloseTo(0.5, 12);
    expect(compOf(res, "segmentIndex").a).toEqual([0, 0, 1]);
  });
});

describe("ArCHer", () => {
  it("min(Q1,Q2) - min(V1,V2); qTarget = r + gamma min(V1,V2)(s')", () => {
    const b = mkBatch({
      g: {
        a: [
          { reward: 0, q1: 1, q2: 0.8, value: 0.5, v2: 0.7 },
          { reward: 1, q1: 2, q2: 2.5, value: 1, v2: 0.9 },
        ],
      },
    });
    const res = run("archer", b);
    expectClose(advOf(res).a, [0.3, 1.1], 12);
    expectClose(compOf(res, "qTarget").a as number[], [0.9 * 0.9, 1], 12);
  });
  it("a missing second head falls back to the first", () => {
    const b = mkBatch({ g: { a: [{ reward: 0, q1: 1, value: 0.25 }] } });
    expectClose(advOf(run("archer", b)).a, [0.75], 12);
  });
});
