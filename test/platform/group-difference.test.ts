// The compare page's "difference of the two groups" (lib/stats/group-difference.ts) on stored
// numbers, checked against scipy 1.17.1:
//   a = [0.62, 0.71, 0.58]; b = [0.41, 0.47, 0.39, 0.52]
//   r = scipy.stats.ttest_ind(a, b, equal_var=False)  -> statistic 3.9016339417052537,
//       pvalue 0.016668199823398983, df 4.105603081470865,
//       r.confidence_interval(0.95) -> (0.05590820903010496, 0.32242512430322845)
//   numpy mean / std(ddof=1): a 0.6366666666666667 / 0.06658328118479392, b 0.4475 / 0.05909032633745279
//   scipy.stats.permutation_test((a, b), |mean(x) - mean(y)|, permutation_type="independent",
//       alternative="greater", n_resamples=inf) -> pvalue 0.02857142857142857 (1 of 35 splits)
//   (the share of splits at least as far from 0 in size; scipy's default two-sided p on the signed
//   difference doubles the smaller tail instead: 0.0571 here, the same for equal group sizes)
// The 12 + 12 fixture below: exact p 0.006452290474366124 (the same call, all 2,704,156 splits).
import { describe, expect, it } from "vitest";
import { groupDifference, valueAtStep } from "../../lib/stats/group-difference";

const run = (runId: string, value: number | undefined) => ({ runId, value });

describe("groupDifference", () => {
  it("matches scipy's Welch test, interval and exact permutation p-value", () => {
    const d = groupDifference(
      { label: "estimator=gigpo", values: [run("a1", 0.62), run("a2", 0.71), run("a3", 0.58)] },
      { label: "estimator=grpo", values: [run("b1", 0.41), run("b2", 0.47), run("b3", 0.39), run("b4", 0.52)] },
    );
    if (!d.ok) throw new Error(d.reason);
    expect(d.a).toMatchObject({ n: 3, missing: [] });
    expect(d.a.mean).toBeCloseTo(0.6366666666666667, 12);
    expect(d.a.std).toBeCloseTo(0.06658328118479392, 12);
    expect(d.b.mean).toBeCloseTo(0.4475, 12);
    expect(d.b.std).toBeCloseTo(0.05909032633745279, 12);
    expect(d.welch.diff).toBeCloseTo(0.6366666666666667 - 0.4475, 12);
    expect(d.welch.t).toBeCloseTo(3.9016339417052537, 9);
    expect(d.welch.df).toBeCloseTo(4.105603081470865, 9);
    expect(d.welch.p).toBeCloseTo(0.016668199823398983, 8);
    expect(d.welch.ci95[0]).toBeCloseTo(0.05590820903010496, 8);
    expect(d.welch.ci95[1]).toBeCloseTo(0.32242512430322845, 8);
    expect(d.permutation).toEqual({ p: 1 / 35, exact: true, splits: 35 });
    expect(d.permutation.p).toBeCloseTo(0.02857142857142857, 12);
  });

  it("leaves out a run with no value at the step (or a non-finite one) and names it", () => {
    const d = groupDifference(
      { label: "A", values: [run("a1", 0.62), run("a2", 0.71), run("a3", 0.58), run("a4", undefined)] },
      { label: "B", values: [run("b1", 0.41), run("b2", 0.47), run("b3", 0.39), run("b4", 0.52), run("b5", Number.NaN)] },
    );
    if (!d.ok) throw new Error(d.reason);
    expect(d.a.missing).toEqual(["a4"]);
    expect(d.b.missing).toEqual(["b5"]);
    expect(d.welch.p).toBeCloseTo(0.016668199823398983, 8);
  });

  it("refuses a group left with fewer than 2 values", () => {
    const d = groupDifference({ label: "A", values: [run("a1", 0.6), run("a2", undefined)] }, { label: "B", values: [run("b1", 0.4), run("b2", 0.5)] });
    expect(d.ok).toBe(false);
    if (!d.ok) expect(d.reason).toContain("A has 1 run(s)");
  });

  it("samples the permutation test when the splits are too many to list, close to scipy's exact p", () => {
    const a = [0.5, 0.55, 0.61, 0.48, 0.58, 0.63, 0.52, 0.57, 0.6, 0.54, 0.49, 0.59];
    const b = [0.47, 0.53, 0.5, 0.44, 0.56, 0.51, 0.46, 0.52, 0.49, 0.55, 0.45, 0.5];
    const d = groupDifference({ label: "A", values: a.map((v, i) => run(`a${i}`, v)) }, { label: "B", values: b.map((v, i) => run(`b${i}`, v)) });
    if (!d.ok) throw new Error(d.reason);
    expect(d.permutation.exact).toBe(false);
    expect(d.permutation.splits).toBe(20_000);
    // 20,000 draws: standard error sqrt(p(1-p)/n) ~ 0.00057 at p = 0.0065
    expect(Math.abs(d.permutation.p - 0.006452290474366124)).toBeLessThan(0.0025);
  });
});

describe("valueAtStep", () => {
  it("returns the stored value at exactly that step, never a neighbour", () => {
    const steps = [0, 10, 20, 30];
    const values = [1, 2, "NaN", 4];
    expect(valueAtStep(steps, values, 10)).toBe(2);
    expect(valueAtStep(steps, values, 30)).toBe(4);
    expect(valueAtStep(steps, values, 15)).toBeUndefined();
    expect(valueAtStep(steps, values, 20)).toBeNaN();
  });
});
