// Turn-level reward estimators: MAPO, MT-GRPO, IGPO, MARS. Hand-computed.
import { describe, expect, it } from "vitest";
import { advOf, compOf, expectClose, mean, mkBatch, run, std } from "./helpers";

describe("MAPO", () => {
  // a: judge [1, 0]; b: judge [0, null, 1] -> the failed judgement becomes b's valid mean 0.5
  // gamma 0.5: G_a = [1, 0]; G_b = [0 + 0.5*1, 0.5 + 0.5*1, 1] = [0.5, 1, 1]
  const b = () => mkBatch({ g: { a: [{ judgeScore: 1 }, { judgeScore: 0 }], b: [{ judgeScore: 0 }, { judgeScore: null }, { judgeScore: 1 }] } });
  const E = 1e-6;
  const all = [1, 0, 0.5, 1, 1];
  const zb = (x: number) => (x - 0.7) / (std(all) + E);
  it("G = discounted judge scores; A = 0.4 z(uid, turn) + 0.6 z(batch); singleton (uid, turn) masked", () => {
    const res = run("mapo", b(), { gamma: 0.5 });
    const a = advOf(res);
    const s0 = std([1, 0.5]);
    const s1 = std([0, 1]);
    expectClose(a.a, [0.4 * (0.25 / (s0 + E)) + 0.6 * zb(1), 0.4 * (-0.5 / (s1 + E)) + 0.6 * zb(0)], 10);
    expectClose(a.b, [0.4 * (-0.25 / (s0 + E)) + 0.6 * zb(0.5), 0.4 * (0.5 / (s1 + E)) + 0.6 * zb(1), 0], 10);
    expect(compOf(res, "lossMask").b).toEqual([1, 1, 0]);
    expect(compOf(res, "judgeScore").b).toEqual([0, 0.5, 1]);
    expect(res.diagnostics.lossMask).toEqual({ maskedTurns: 1 });
  });
  it("singleton: zero keeps the batch part", () => {
    const a = advOf(run("mapo", b(), { gamma: 0.5, singleton: "zero" }));
    expect(a.b[2]).toBeCloseTo(0.6 * zb(1), 10);
  });
  it("a batch of exactly one turn: the batch part is 0 (no batch statistic of one member), whatever its score", () => {
    for (const judgeScore of [0, 1, -3.5, 1e6, null]) {
      const one = mkBatch({ g: { a: [{ judgeScore }] } });
      const zero = run("mapo", one, { singleton: "zero" });
      expect(compOf(zero, "batch").a).toEqual([0]); // not (G - 0) / (1 + eps), the one-member rule of GiGPO's A_E
      expect(compOf(zero, "turn").a).toEqual([0]); // its (uid, turn 0) group has one member too
      expect(advOf(zero).a).toEqual([0]);
      expect(compOf(zero, "lossMask").a).toEqual([1]);
      const masked = run("mapo", one); // default singleton "mask": dropped from the loss as well
      expect(compOf(masked, "batch").a).toEqual([0]);
      expect(advOf(masked).a).toEqual([0]);
      expect(compOf(masked, "lossMask").a).toEqual([0]);
      expect(masked.diagnostics.lossMask).toEqual({ maskedTurns: 1 });
    }
    // one trajectory of one turn in each of two uids is a batch of two turns: the batch part is back
    const two = run("mapo", mkBatch({ g: { a: [{ judgeScore: 1 }] }, h: { b: [{ judgeScore: 0 }] } }), { singleton: "zero" });
    const s = std([1, 0]);
    expectClose(compOf(two, "batch").a as number[], [0.5 / (s + E)], 10);
    expectClose(advOf(two).a, [0.6 * (0.5 / (s + E))], 10);
  });
});

describe("MT-GRPO", () => {
  // a: tool turn r 0.3 (tool result), answer r 1 -> R_T 0.3, R_O 1
  // b: tool turn r 0 (tool result), answer r 0 -> R_T 0,   R_O 0
  // c: no tool result: r 0.3, 0.2, 1           -> R_T 0.5, R_O 1 (combined 1.5)
  const b = mkBatch({
    g: {
      a: [{ reward: 0.3, toolResult: true }, { reward: 1 }],
      b: [{ reward: 0, toolResult: true }, { reward: 0 }],
      c: [{ reward: 0.3 }, { reward: 0.2 }, { reward: 1 }],
    },
  });
  const E = 1e-4;
  const z = (xs: number[], i: number) => (xs[i] - mean(xs)) / (std(xs) + E);
  it("tool-phase turns get A_O + lambda A_T, later turns A_O; without a tool result the combined z-score", () => {
    const res = run("mtgrpo", b);
    const a = advOf(res);
    const O = [1, 0, 1];
    const T = [0.3, 0, 0.5];
    expectClose(a.a, [z(O, 0) + z(T, 0), z(O, 0)], 10);
    expectClose(a.b, [z(O, 1) + z(T, 1), z(O, 1)], 10);
    const C = [1.3, 0, 1.5];
    expectClose(a.c, [z(C, 2), z(C, 2), z(C, 2)], 10);
    expect(compOf(res, "phase").a).toEqual(["tool", "answer"]);
  });
  it("group of one: 0", () => {
    expect(advOf(run("mtgrpo", mkBatch({ g: { a: [{ reward: 1, toolResult: true }, { reward: 1 }] } }))).a).toEqual([0, 0]);
  });
});

describe("IGPO", () => {
  // a: info gains 0.2, 0 (excluded), answer reward 0.8; b: info gain -0.1, answer reward 0
  const b = () => mkBatch({ g: { a: [{ infoGain: 0.2 }, { infoGain: 0 }, { reward: 0.8 }], b: [{ infoGain: -0.1 }, { reward: 0 }] } });
  const pop = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + (x - mean(xs)) ** 2, 0) / xs.length + 1e-8);
  const E = 1e-6;
  it("joint: one pool per uid, population std sqrt(var + 1e-8), exact-zero gains excluded, A_k = r~_k + A_{k+1}", () => {
    const pool = [0.2, 0.8, -0.1, 0];
    const n = (x: number) => (x - mean(pool)) / (pop(pool) + E);
    const a = advOf(run("igpo", b()));
    expectClose(a.a, [n(0.2) + n(0.8), n(0.8), n(0.8)], 10);
    expectClose(a.b, [n(-0.1) + n(0), n(0)], 10);
  });
  it("separate: info gains and outcomes pooled apart", () => {
    const ig = [0.2, -0.1];
    const out = [0.8, 0];
    const ni = (x: number) => (x - mean(ig)) / (pop(ig) + E);
    const no = (x: number) => (x - mean(out)) / (pop(out) + E);
    const res = run("igpo", b(), { mode: "separate" });
    expectClose(advOf(res).a, [ni(0.2) + no(0.8), no(0.8), no(0.8)], 10);
    expect(compOf(res, "kind").a).toEqual(["info_gain", "excluded", "outcome"]);
  });
  it("a pool of one: std 1, mean = the value, so it normalises to 0", () => {
    expect(advOf(run("igpo", mkBatch({ g: { a: [{ reward: 0.7 }] } }))).a).toEqual([0]);
  });
  it("gamma discounts over turns", () => {
    const pool = [0.2, 0.8, -0.1, 0];
    const n = (x: number) => (x - mean(pool)) / (pop(pool) + E);
    expectClose(advOf(run("igpo", b(), { gamma: 0.5 })).a, [n(0.2) + 0.25 * n(0.8), 0.5 * n(0.8), n(0.8)], 10);
  });
});

describe("MARS", () => {
  // x: p1 0, p2 0, p1 1, p2 -1 ; y: p1 0, p2 1
  const b = () =>
    mkBatch({
      g: {
        x: [{ agent: "p1" }, { agent: "p2" }, { agent: "p1", reward: 1 }, { agent: "p2", reward: -1 }],
        y: [{ agent: "p1" }, { agent: "p2", reward: 1 }],
      },
    });
  it("paper: per-player return over its own turns, then z-score per role", () => {
    // returns: x: p1 [1, ., 1, .], p2 [., -1, ., -1]; y: p1 0, p2 1
    const p1 = [1, 1, 0];
    const p2 = [-1, -1, 1];
    const z = (xs: number[], v: number) => (v - mean(xs)) / (std(xs) + 1e-6);
    const a = advOf(run("mars", b(), { variant: "paper" }));
    expectClose(a.x, [z(p1, 1), z(p2, -1), z(p1, 1), z(p2, -1)], 10);
    expectClose(a.y, [z(p1, 0), z(p2, 1)], 10);
  });
  it("code: centre per role, whiten, per-player return, whiten again", () => {
    const whiten = (xs: number[]) => {
      const m = xs.reduce((s, v) => s + v, 0) / (xs.length + 1e-8);
      const v = (xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length + 1e-8)) * (xs.length / (xs.length - 1));
      return xs.map((x) => (x - m) / Math.sqrt(v + 1e-8));
    };
    // rows x0..x3, y0, y1 ; p1 rewards [0, 1, 0] mean 1/3 ; p2 rewards [0, -1, 1] mean 0
    const c = whiten([-1 / 3, 0, 2 / 3, -1, -1 / 3, 1]);
    const ret = [c[0] + c[2], c[1] + c[3], c[2], c[3], c[4], c[5]];
    const w = whiten(ret);
    const a = advOf(run("mars", b()));
    expectClose([...a.x, ...a.y], w, 10);
  });
  it("roles are per env tag", () => {
    const batch = b();
    batch.groups[0].trajectories[1].envTag = "other-game";
    const a = advOf(run("mars", batch, { variant: "paper" }));
    // y's p1 and p2 are now roles of one turn each: mean 0, std 1
    expectClose(a.y, [0, 1 / (1 + 1e-6)], 10);
  });
});
