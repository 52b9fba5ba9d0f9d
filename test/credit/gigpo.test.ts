// GiGPO (verl-agent's core_gigpo.py; the rules in lib/credit/README.md): every rule with hand-computed numbers.
import { describe, expect, it } from "vitest";
import { groupAnchorIds, renumberGroups } from "../../lib/credit";
import { advOf, compOf, expectClose, mkBatch, run, std } from "./helpers";

const EPS = 1e-6;
const P = { gamma: 0.5, omega: 1, mode: "mean_std_norm", invalidPenalty: 0.1 };

// g0: a = [A r0, B r1]                 R = 1, G = [0.5, 1]
//     b = [A r0, C r0, B r0 invalid]   R = 0, G = [0, 0, 0 - 0.1]  (penalty after discounting)
// g1: c = [A r0]                       same anchor text as g0's A, other uid: must not group
//     d = [X r0, X r1]                 X visited twice in one trajectory: both join
const batch = () =>
  mkBatch({
    g0: {
      a: [
        { anchor: "A", reward: 0 },
        { anchor: "B", reward: 1 },
      ],
      b: [
        { anchor: "A", reward: 0 },
        { anchor: "C", reward: 0 },
        { anchor: "B", reward: 0, invalid: true },
      ],
    },
    g1: {
      c: [{ anchor: "A", reward: 0 }],
      d: [
        { anchor: "X", reward: 0 },
        { anchor: "X", reward: 1 },
      ],
    },
  });

describe("GiGPO", () => {
  const res = run("gigpo", batch(), P);
  const ep = compOf(res, "episode") as Record<string, number[]>;
  const st = compOf(res, "step") as Record<string, number[]>;

  it("step return G_t = r_t + gamma G_{t+1}; the invalid penalty is subtracted after discounting, from that turn only", () => {
    const G = compOf(res, "return");
    expectClose(G.a as number[], [0.5, 1], 14);
    expectClose(G.b as number[], [0, 0, -0.1], 14); // not [-0.025, -0.05, -0.1]
  });

  it("episode advantage: statistics over all step rows of the uid, each row holding its (penalised) copy of R", () => {
    const rows = [1, 1, 0, 0, -0.1];
    const m = 0.38;
    const s = std(rows);
    expect(s).toBeCloseTo(Math.sqrt(1.288 / 4), 12);
    expectClose(ep.a, [(1 - m) / (s + EPS), (1 - m) / (s + EPS)], 10);
    expectClose(ep.b, [(0 - m) / (s + EPS), (0 - m) / (s + EPS), (-0.1 - m) / (s + EPS)], 10);
  });

  it("step advantage: G normalised within anchor groups (unbiased std, eps on std)", () => {
    const sA = std([0.5, 0]);
    const sB = std([1, -0.1]);
    expectClose([st.a[0], st.b[0]], [0.25 / (sA + EPS), -0.25 / (sA + EPS)], 10);
    expectClose([st.a[1], st.b[2]], [0.55 / (sB + EPS), -0.55 / (sB + EPS)], 10);
  });

  it("singleton anchor group: A_S = 0 exactly", () => {
    expect(st.b[1]).toBe(0); // C
    expect(st.c[0]).toBe(0);
  });

  it("A = A_E + omega * A_S", () => {
    const a = advOf(res);
    a.b.forEach((x, i) => {
      expect(x).toBeCloseTo(ep.b[i] + st.b[i], 12);
    });
    const a2 = advOf(run("gigpo", batch(), { ...P, omega: 0.5 }));
    a2.a.forEach((x, i) => {
      expect(x).toBeCloseTo(ep.a[i] + 0.5 * st.a[i], 12);
    });
  });

  it("equal anchors in different uids never group; repeated visits inside one trajectory do", () => {
    const size = compOf(res, "anchorGroupSize");
    expect(size.a).toEqual([2, 2]);
    expect(size.c).toEqual([1]); // "A" in g1 is not g0's "A"
    expect(size.d).toEqual([2, 2]);
    const gid = compOf(res, "anchorGroup");
    expect(gid.a[0]).toBe(gid.b[0]);
    expect(gid.c[0]).not.toBe(gid.a[0]);
    expect(gid.d[0]).toBe(gid.d[1]);
    // X: G = [0.5, 1] -> mean 0.75
    const sX = std([0.5, 1]);
    expectClose(st.d, [-0.25 / (sX + EPS), 0.25 / (sX + EPS)], 10);
  });

  it("group of one step row: mean 0, std 1 (A_E = R / (1 + eps)); trajectories weigh by length in g1", () => {
    const single = run("gigpo", mkBatch({ g: { s: [{ anchor: "A", reward: 2 }] } }), P);
    expectClose(single.trajectories[0].advantages, [2 / (1 + EPS)], 12);
    // g1 rows: c: 0, d: 1, 1 -> mean 2/3 over 3 rows (not 1/2 over 2 trajectories)
    const s = std([0, 1, 1]);
    expectClose(ep.c, [(0 - 2 / 3) / (s + EPS)], 10);
  });

  it("perTrajectory: statistics over one copy per trajectory (paper Eq. 3)", () => {
    const r = run("gigpo", batch(), { ...P, perTrajectory: true });
    const e = compOf(r, "episode") as Record<string, number[]>;
    const s = std([1, 0]); // first rows of a and b
    expectClose(e.a, [0.5 / (s + EPS), 0.5 / (s + EPS)], 10);
    // b's invalid last turn keeps its own penalised copy: (-0.1 - 0.5) / (s + eps)
    expectClose(e.b, [-0.5 / (s + EPS), -0.5 / (s + EPS), -0.6 / (s + EPS)], 10);
    expectClose(e.c, [(0 - 0.5) / (std([0, 1]) + EPS)], 10);
  });

  it("mean_norm: subtract means only", () => {
    const r = run("gigpo", batch(), { ...P, mode: "mean_norm" });
    const e = compOf(r, "episode") as Record<string, number[]>;
    const s = compOf(r, "step") as Record<string, number[]>;
    expectClose(e.a, [0.62, 0.62], 12);
    expectClose(s.a, [0.25, 0.55], 12);
    expect(s.b[1]).toBe(0);
  });

  it("zero variance inside an anchor group gives 0, not x / eps", () => {
    const r = run(
      "gigpo",
      mkBatch({
        g: {
          a: [
            { anchor: "S", reward: 0.1 },
            { anchor: "T", reward: 0.2 },
          ],
          b: [
            { anchor: "S", reward: 0.1 },
            { anchor: "T", reward: 0.2 },
          ],
        },
      }),
      P,
    );
    for (const t of r.trajectories) expect(t.advantages).toEqual([0, 0]);
    expect(r.diagnostics.groups.zeroVarianceShare).toBe(1);
  });

  it("canonical anchors: JSON observations equal up to key order / number formatting group together", () => {
    const text =
      '{"g":{"a":{"turns":[{"anchor":{"x":1.0,"y":[2,{"k":true}]},"reward":1}]},"b":{"turns":[{"anchor":{"y":[2e0,{"k":true}],"x":1},"reward":0}]}}}';
    const parsed = JSON.parse(text) as { g: Record<string, { turns: { anchor: unknown; reward: number }[] }> };
    const b = { groups: [{ uid: "g", trajectories: Object.entries(parsed.g).map(([id, t]) => ({ id, turns: t.turns as never })) }] };
    const r = run("gigpo", b, P);
    expect(compOf(r, "anchorGroupSize").a).toEqual([2]);
  });

  it("similarity mode: greedy in row order, a turn joins the first cluster whose first member is similar enough", () => {
    const obs1 = "You are in the kitchen. There is a red apple on the table and a knife.";
    const obs2 = "You are in the kitchen. There is a red apple on the table and a knive."; // one char off
    const obs3 = "You are in the garden. A gate leads north.";
    const b = mkBatch({
      g: {
        a: [
          { anchor: obs1, reward: 0 },
          { anchor: obs3, reward: 1 },
        ],
        b: [{ anchor: obs2, reward: 0 }],
      },
    });
    const exact = run("gigpo", b, P);
    expect(compOf(exact, "anchorGroupSize").b).toEqual([1]);
    const sim = run("gigpo", b, { ...P, anchorMatch: "similarity", similarityThreshold: 0.95 });
    expect(compOf(sim, "anchorGroupSize").b).toEqual([2]);
    expect(compOf(sim, "anchorGroup").b[0]).toBe(compOf(sim, "anchorGroup").a[0]);
    expect(compOf(sim, "anchorGroupSize").a).toEqual([2, 1]);
  });

  it("diagnostics: anchor-group histogram, singleton ratio, mean |A_S|", () => {
    const d = res.diagnostics.anchorGroups!;
    // groups: g0 {A:2, B:2, C:1}, g1 {A:1, X:2}
    expect(d.count).toBe(5);
    expect(d.sizeHistogram).toEqual({ "1": 2, "2": 3 });
    expect(d.singletonRatio).toBeCloseTo(2 / 5, 12);
    const all = Object.values(st).flat();
    expect(d.meanAbsStep).toBeCloseTo(all.reduce((s, x) => s + Math.abs(x), 0) / all.length, 12);
  });

  it("defaults follow the verl-agent scripts: gamma 0.95, omega 1, mean_std_norm, penalty 0.1", () => {
    const r = run(
      "gigpo",
      mkBatch({
        g: {
          a: [
            { anchor: "A", reward: 0, invalid: true },
            { anchor: "B", reward: 1 },
          ],
        },
      }),
    );
    expectClose(compOf(r, "return").a as number[], [0.95 - 0.1, 1], 14);
  });
});

describe("anchor-group ids of one task group (the heatmap's view)", () => {
  it("numbers groups by first appearance in row-major order; a turn without an anchor is in no group", () => {
    expect(
      groupAnchorIds([
        ["s0", "s1", "s0"],
        ["s1", null, "s2"],
      ]),
    ).toEqual([
      [0, 1, 0],
      [1, null, 2],
    ]);
    // a missing anchor is not the empty-string anchor
    expect(
      groupAnchorIds([
        [null, ""],
        ["", null],
      ]),
    ).toEqual([
      [null, 0],
      [0, null],
    ]);
    expect(
      renumberGroups([
        [7, 3],
        [3, null],
      ]),
    ).toEqual([
      [0, 1],
      [1, null],
    ]);
  });
});
