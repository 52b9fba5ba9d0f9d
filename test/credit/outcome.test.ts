// GRPO, Dr.GRPO, RLOO, REINFORCE++, REINFORCE++-baseline: hand-computed cases pinning
// the reference code's semantics (unbiased std, eps on std, singleton rules, unequal lengths).
import { describe, expect, it } from "vitest";
import { advOf, compOf, expectClose, mkBatch, rewards, run } from "./helpers";

const EPS = 1e-6;
// Group g0: scores R = [1, 0, 0] from trajectories of unequal length (2, 1, 3 turns).
const b3 = () => rewards({ g0: { a: [0, 1], b: [0], c: [0, 0, 0] } });
// mean 1/3; unbiased var = ((2/3)^2 + 2 (1/3)^2) / 2 = 1/3
const SD = Math.sqrt(1 / 3);

describe("GRPO", () => {
  it("z-scores trajectory scores with the unbiased std and eps added to the std, broadcast to every turn", () => {
    const a = advOf(run("grpo", b3()));
    const hi = (1 - 1 / 3) / (SD + EPS);
    const lo = (0 - 1 / 3) / (SD + EPS);
    expectClose(a.a, [hi, hi], 12);
    expectClose(a.b, [lo], 12);
    expectClose(a.c, [lo, lo, lo], 12);
    expect(hi).toBeCloseTo(1.1547, 4);
  });
  it("group of one: mean 0, std 1, so A = R / (1 + eps)", () => {
    const a = advOf(run("grpo", rewards({ g: { solo: [0.5, 1.5] } })));
    expectClose(a.solo, [2 / (1 + EPS), 2 / (1 + EPS)], 12);
  });
  it("zero-variance group: exactly 0 (advantage collapse), reported in diagnostics", () => {
    const res = run("grpo", rewards({ g: { a: [1], b: [0.7, 0.3] }, h: { c: [0], d: [1] } }));
    expect(advOf(res).a).toEqual([0]);
    expect(advOf(res).b).toEqual([0, 0]);
    expect(res.diagnostics.groups.zeroVarianceShare).toBe(0.5);
  });
  it("epsilon is a parameter", () => {
    const a = advOf(run("grpo", rewards({ g: { a: [1], b: [0] } }), { epsilon: 0.5 }));
    // mean 0.5, std sqrt(0.5)
    expectClose(a.a, [0.5 / (Math.sqrt(0.5) + 0.5)], 12);
  });
  it("groups are independent", () => {
    const a = advOf(run("grpo", rewards({ g: { a: [1], b: [0] }, h: { c: [5], d: [5] } })));
    expect(a.c).toEqual([0]);
    expectClose(a.a, [0.5 / (Math.sqrt(0.5) + EPS)], 12);
  });
});

describe("Dr.GRPO", () => {
  it("R - mean, no std", () => {
    const a = advOf(run("drgrpo", b3()));
    expectClose(a.a, [2 / 3, 2 / 3], 12);
    expectClose(a.c, [-1 / 3, -1 / 3, -1 / 3], 12);
  });
  it("singleton: mean 0 so A = R", () => {
    expect(advOf(run("drgrpo", rewards({ g: { s: [0.25, 0.5] } }))).s).toEqual([0.75, 0.75]);
  });
});

describe("RLOO", () => {
  it("n/(n-1) (R - mean) = R - mean of the others", () => {
    const res = run("rloo", b3());
    const a = advOf(res);
    expectClose(a.a, [1 - 0, 1 - 0], 12); // others: 0, 0
    expectClose(a.b, [0 - 0.5], 12); // others: 1, 0
    expectClose(compOf(res, "baseline").b as number[], [0.5], 12);
  });
  it("singleton: R", () => {
    expect(advOf(run("rloo", rewards({ g: { s: [2, -1] } }))).s).toEqual([1, 1]);
  });
});

describe("REINFORCE++-baseline", () => {
  it("R - group mean, broadcast to tokens, whitened over all valid tokens (token-weighted, Bessel, sqrt(var + 1e-8))", () => {
    // g: a R=1 (2 turns, 3 and 1 tokens), b R=0 (1 turn, 2 tokens); h: c R=3 singleton (1 turn, 1 token)
    const batch = mkBatch({
      g: {
        a: [
          { reward: 1, tokens: 3 },
          { reward: 0, tokens: 1 },
        ],
        b: [{ reward: 0, tokens: 2 }],
      },
      h: { c: [{ reward: 3, tokens: 1 }] },
    });
    const a = advOf(run("reinforcepp_baseline", batch));
    // centred: a 0.5 (4 tokens), b -0.5 (2 tokens), c 3 (singleton mean 0; 1 token) -> N = 7 tokens
    const xs = [0.5, 0.5, 0.5, 0.5, -0.5, -0.5, 3];
    const m = xs.reduce((s, x) => s + x, 0) / (7 + 1e-8);
    const v = (xs.reduce((s, x) => s + (x - m) ** 2, 0) / (7 + 1e-8)) * (7 / 6);
    const w = (x: number) => (x - m) / Math.sqrt(v + 1e-8);
    expectClose(a.a, [w(0.5), w(0.5)], 12);
    expectClose(a.b, [w(-0.5)], 12);
    expectClose(a.c, [w(3)], 12);
  });
});

describe("REINFORCE++", () => {
  it("gamma 1: every token carries R, then batch whitening", () => {
    const a = advOf(run("reinforcepp", rewards({ g: { a: [0, 1], b: [0] } })));
    // tokens: R = 1, 1, 0 -> mean 2/3, var = (2 (1/3)^2 + (2/3)^2) / 3 * 3/2 = 1/3
    const m = 2 / (3 + 1e-8);
    const v = ((2 * (1 - m) ** 2 + m ** 2) / (3 + 1e-8)) * 1.5;
    expectClose(a.a, [(1 - m) / Math.sqrt(v + 1e-8), (1 - m) / Math.sqrt(v + 1e-8)], 12);
    expectClose(a.b, [-m / Math.sqrt(v + 1e-8)], 12);
  });
  it("gamma < 1 discounts inside a turn's response and resets after its end token; the turn reports its token mean", () => {
    const batch = mkBatch({ g: { a: [{ reward: 2, tokens: 2 }], b: [{ reward: 0, tokens: 1 }] } });
    const res = run("reinforcepp", batch, { gamma: 0.5 });
    // token returns: a: [0.5*2, 2] = [1, 2]; b: [0]
    const xs = [1, 2, 0];
    const m = 3 / (3 + 1e-8);
    const v = (xs.reduce((s, x) => s + (x - m) ** 2, 0) / (3 + 1e-8)) * 1.5;
    expectClose(compOf(res, "return").a as number[], [1.5], 12);
    expectClose(advOf(res).a, [(1.5 - m) / Math.sqrt(v + 1e-8)], 12);
  });
});
