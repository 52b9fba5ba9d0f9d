// GiGPO's rowCopies: a turn the trainer's batch held more than once (verl-agent adjust_batch)
// counts that many times in the episode and anchor statistics. Checked against a brute force that
// expands the batch into its rows, copies included, and normalises as verl-agent's core_gigpo.py
// does (torch.mean, unbiased torch.std, a group of one: mean 0 / the value, std 1).
import { describe, expect, it } from "vitest";
import { CreditRequestError, runCredit } from "../../lib/credit/index";

type T = { reward: number; anchor: string; invalid?: boolean };
const groups = [
  {
    uid: "task-a",
    trajectories: [
      {
        id: "a0",
        turns: [
          { reward: 0, anchor: "s0" },
          { reward: 0, anchor: "s1" },
          { reward: 1, anchor: "s2" },
        ] as T[],
      },
      {
        id: "a1",
        turns: [
          { reward: 0, anchor: "s0" },
          { reward: 0, anchor: "s3", invalid: true },
        ] as T[],
      },
      {
        id: "a2",
        turns: [
          { reward: 0, anchor: "s0" },
          { reward: 0.5, anchor: "s1" },
        ] as T[],
      },
    ],
  },
  {
    uid: "task-b",
    trajectories: [
      { id: "b0", turns: [{ reward: 1, anchor: "x" }] as T[] },
      {
        id: "b1",
        turns: [
          { reward: 0, anchor: "x" },
          { reward: 0, anchor: "y" },
        ] as T[],
      },
    ],
  },
];
const P = { gamma: 0.9, omega: 1, invalidPenalty: 0.1, epsilon: 1e-6 };

function bruteForce(copies: [string, number, number, number][], mode: "mean_std_norm" | "mean_norm"): number[] {
  const rows: { g: string; ti: number; r: number; R: number; G: number; anchor: string; times: number }[] = [];
  for (const grp of groups)
    grp.trajectories.forEach((tr, ti) => {
      const R = tr.turns.reduce((s, t) => s + t.reward, 0);
      let run = 0;
      const G: number[] = [];
      for (let k = tr.turns.length - 1; k >= 0; k--) {
        run = tr.turns[k].reward + P.gamma * run;
        G[k] = run - (tr.turns[k].invalid ? P.invalidPenalty : 0);
      }
      tr.turns.forEach((t, k) => {
        const extra = copies.find(([u, i, j]) => u === grp.uid && i === ti && j === k)?.[3] ?? 0;
        rows.push({ g: grp.uid, ti, r: k, R: R - (t.invalid ? P.invalidPenalty : 0), G: G[k], anchor: t.anchor, times: 1 + extra });
      });
    });
  const expand = (key: (x: (typeof rows)[0]) => string, val: (x: (typeof rows)[0]) => number) => {
    const by = new Map<string, number[]>();
    for (const x of rows) for (let c = 0; c < x.times; c++) by.set(key(x), [...(by.get(key(x)) ?? []), val(x)]);
    return by;
  };
  const stats = (xs: number[], singletonMean: (x: number) => number) => {
    if (xs.length === 1) return { mean: singletonMean(xs[0]), std: 1 };
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    return { mean, std: Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) };
  };
  const norm = (v: number, s: { mean: number; std: number }) => (mode === "mean_norm" ? v - s.mean : s.std === 0 ? 0 : (v - s.mean) / (s.std + P.epsilon));
  const ep = expand(
    (x) => x.g,
    (x) => x.R,
  );
  const an = expand(
    (x) => `${x.g}|${x.anchor}`,
    (x) => x.G,
  );
  return rows.map(
    (x) =>
      norm(
        x.R,
        stats(ep.get(x.g)!, () => 0),
      ) +
      P.omega *
        norm(
          x.G,
          stats(an.get(`${x.g}|${x.anchor}`)!, (v) => v),
        ),
  );
}

const advantages = (params: Record<string, unknown>) =>
  runCredit({ estimator: "gigpo", params: { ...P, ...params }, groups }).trajectories.flatMap((t) => t.advantages);

describe("GiGPO rowCopies (verl-agent adjust_batch copies)", () => {
  for (const mode of ["mean_std_norm", "mean_norm"] as const) {
    it(`counts a copied turn once per copy in both statistics (${mode})`, () => {
      const copies: [string, number, number, number][] = [
        ["task-a", 0, 2, 1],
        ["task-a", 2, 0, 2],
        ["task-b", 0, 0, 1],
      ];
      const got = advantages({ mode, rowCopies: copies });
      const want = bruteForce(copies, mode);
      got.forEach((v, i) => {
        expect(v).toBeCloseTo(want[i], 12);
      });
      // and the copies matter: without them the answer is another one
      expect(Math.max(...advantages({ mode }).map((v, i) => Math.abs(v - got[i])))).toBeGreaterThan(1e-3);
      const plain = bruteForce([], mode);
      advantages({ mode }).forEach((v, i) => {
        expect(v).toBeCloseTo(plain[i], 12);
      });
    });
  }

  it("names a copy that points at no turn", () => {
    for (const [copy, msg] of [
      [["task-z", 0, 0, 1], 'params.rowCopies[0]: no group "task-z"'],
      [["task-a", 3, 0, 1], 'params.rowCopies[0]: group "task-a" has no trajectory 3'],
      [["task-b", 1, 2, 1], 'params.rowCopies[0]: trajectory 1 of group "task-b" has no turn 2'],
    ] as const) {
      let err: unknown;
      try {
        advantages({ rowCopies: [copy] });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CreditRequestError);
      expect((err as Error).message).toContain(msg);
    }
  });
});
