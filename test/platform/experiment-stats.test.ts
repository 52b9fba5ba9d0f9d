// The tests and intervals the GiGPO-vs-GRPO experiment reports (lib/stats/two-sample.ts), checked against
// values derived by hand, from t tables and by enumeration.
import { describe, expect, it } from "vitest";
import {
  bootstrapDiffCI,
  minimumDetectableDifference,
  seedsForPower,
  welchPower,
  pairedTTest,
  permutationTest,
  studentQuantile,
  studentTwoSidedP,
  verdict,
  welchTTest,
} from "../../lib/stats/two-sample";

describe("Student's t", () => {
  it("quantiles match the tables", () => {
    expect(studentQuantile(0.975, 4)).toBeCloseTo(2.776445, 5);
    expect(studentQuantile(0.975, 8)).toBeCloseTo(2.306004, 5);
    expect(studentQuantile(0.975, 1e6)).toBeCloseTo(1.959966, 4);
    expect(studentQuantile(0.8, 8)).toBeCloseTo(0.88889, 4);
    expect(studentQuantile(0.025, 4)).toBeCloseTo(-2.776445, 5);
    expect(studentQuantile(0.5, 3)).toBe(0);
  });
  it("quantile and two-sided p are inverse", () => {
    for (const df of [1.5, 3, 7.3, 30]) expect(studentTwoSidedP(studentQuantile(0.99, df), df)).toBeCloseTo(0.02, 8);
  });
  it("rejects bad arguments by name", () => {
    expect(() => studentQuantile(1, 4)).toThrow(/q must be in/);
    expect(() => studentQuantile(0.9, 0)).toThrow(/df must be positive/);
  });
});

describe("Welch's t-test", () => {
  // hand-derived: var(a) = 0.0055, var(b) = 0.00925, se = sqrt(0.00295), Welch-Satterthwaite df
  const a = [0.6, 0.7, 0.8, 0.7, 0.65];
  const b = [0.5, 0.55, 0.7, 0.45, 0.6];
  it("t, df, p and the 95 % interval", () => {
    const r = welchTTest(a, b);
    expect(r.diff).toBeCloseTo(0.13, 10);
    // var(a) = 0.0055, var(b) = 0.00925; se = sqrt((0.0055 + 0.00925) / 5) = sqrt(0.00295)
    expect(r.se).toBeCloseTo(Math.sqrt(0.00295), 10);
    expect(r.t).toBeCloseTo(0.13 / Math.sqrt(0.00295), 8);
    const df = 0.00295 ** 2 / ((0.0055 / 5) ** 2 / 4 + (0.00925 / 5) ** 2 / 4);
    expect(r.df).toBeCloseTo(df, 8);
    const h = studentQuantile(0.975, df) * Math.sqrt(0.00295);
    expect(r.ci95[0]).toBeCloseTo(0.13 - h, 8);
    expect(r.ci95[1]).toBeCloseTo(0.13 + h, 8);
    // the interval excludes 0 exactly when p < 0.05
    expect(r.ci95[0] > 0).toBe(r.p < 0.05);
  });
  it("constant samples: no spread, p 1 or 0", () => {
    expect(welchTTest([0, 0], [0, 0]).p).toBe(1);
    expect(welchTTest([1, 1], [0, 0]).p).toBe(0);
  });
});

describe("paired t-test", () => {
  it("tests the per-pair differences", () => {
    // differences 0.1, 0.15, 0.1, 0.25, 0.05: mean 0.13, var 0.00575; t = 3.8335, df 4, p = 0.01856 (numerical integration of the t density)
    const r = pairedTTest([0.6, 0.7, 0.8, 0.7, 0.65], [0.5, 0.55, 0.7, 0.45, 0.6]);
    expect(r.diff).toBeCloseTo(0.13, 10);
    expect(r.df).toBe(4);
    expect(r.t).toBeCloseTo(3.8335, 3);
    expect(r.p).toBeCloseTo(0.01857, 3);
    expect(r.ci95[0]).toBeGreaterThan(0);
  });
  it("rejects unequal lengths", () => {
    expect(() => pairedTTest([1, 2], [1])).toThrow(/differ in length/);
  });
});

describe("exact permutation test", () => {
  it("enumerates every split", () => {
    const r = permutationTest([1, 2, 3], [4, 5, 6]);
    expect(r.splits).toBe(20);
    // only {1,2,3} vs {4,5,6} and its mirror reach |diff| = 3
    expect(r.p).toBeCloseTo(2 / 20, 12);
  });
});

describe("bootstrap interval", () => {
  it("is reproducible, contains the observed difference and narrows with more data", () => {
    const a = [0.6, 0.7, 0.8, 0.7, 0.65];
    const b = [0.5, 0.55, 0.7, 0.45, 0.6];
    const ci = bootstrapDiffCI(a, b, { seed: "t" });
    expect(bootstrapDiffCI(a, b, { seed: "t" })).toEqual(ci);
    expect(ci[0]).toBeLessThan(0.13);
    expect(ci[1]).toBeGreaterThan(0.13);
    const wide = ci[1] - ci[0];
    const narrow = bootstrapDiffCI([...a, ...a, ...a, ...a], [...b, ...b, ...b, ...b], { seed: "t" });
    expect(narrow[1] - narrow[0]).toBeLessThan(wide * 0.7);
  });
  it("rejects a bad level", () => {
    expect(() => bootstrapDiffCI([1], [2], { level: 1 })).toThrow(/level must be in/);
  });
});

describe("minimum detectable difference", () => {
  it("is (t(0.975) + t(0.8)) se", () => {
    expect(minimumDetectableDifference(0.05, 8)).toBeCloseTo((2.306004 + 0.88889) * 0.05, 4);
    // large df: the normal approximation 2.80 se
    expect(minimumDetectableDifference(1, 1e6)).toBeCloseTo(2.8016, 3);
  });
});

describe("power and seeds", () => {
  // The 5-seed GiGPO vs GRPO pilot: effect 0.412, sd 0.446 (GRPO) and 0.203 (GiGPO). Power of the
  // two-sided Welch test from the noncentral t, scipy 1.17.1:
  //   se = sqrt((sa**2 + sb**2) / n); df = Welch's; tc = stats.t.ppf(0.975, df)
  //   1 - stats.nct.cdf(tc, df, d / se) + stats.nct.cdf(-tc, df, d / se)
  //   -> n = 5: 0.3459, 10: 0.6887, 12: 0.7784, 13: 0.8144, 16: 0.8935
  const scipyPower: [number, number][] = [
    [5, 0.3459],
    [10, 0.6887],
    [12, 0.7784],
    [13, 0.8144],
    [16, 0.8935],
  ];
  it("matches the noncentral t within 0.005 from 10 runs per arm, and errs low below", () => {
    for (const [n, p] of scipyPower) {
      const got = welchPower(0.412, 0.446, 0.203, n);
      if (n >= 10) expect(Math.abs(got - p)).toBeLessThan(0.005);
      else expect(got).toBeLessThan(p); // n = 5: 0.283 (a conservative plan), not 0.346
    }
  });
  it("asks for the fewest seeds that reach the power", () => {
    expect(seedsForPower(0.412, 0.446, 0.203)).toBe(13);
    expect(seedsForPower(-0.412, 0.446, 0.203)).toBe(13);
    expect(seedsForPower(0.412, 0.446, 0.203, { power: 0.9 })).toBe(17);
  });
  it("refuses what has no answer", () => {
    expect(() => seedsForPower(0, 1, 1)).toThrow(/effect must be a non-zero number/);
    expect(() => welchPower(0.4, 0, 0, 5)).toThrow(/not both 0/);
    expect(() => seedsForPower(1e-6, 1, 1, { max: 50 })).toThrow(/more than 50 runs per arm/);
  });
});

describe("verdict", () => {
  const names = { a: "GiGPO", b: "GRPO" };
  it("calls a winner only when every test rejects", () => {
    expect(verdict(0.3, { Welch: 0.01, permutation: 0.02 }, names)).toMatch(/^GiGPO is ahead at the 5 % level/);
    expect(verdict(-0.3, { Welch: 0.01, permutation: 0.02 }, names)).toMatch(/^GRPO is ahead/);
  });
  it("names both sides when the tests disagree", () => {
    const v = verdict(0.445, { Welch: 0.041, permutation: 0.071 }, names);
    expect(v).toMatch(/^mixed: Welch p = 0.041 below 0.05, permutation p = 0.071 not; suggestive that GiGPO is ahead/);
  });
  it("no difference when none rejects", () => {
    expect(verdict(0.1, { Welch: 0.4, permutation: 0.5 }, names)).toMatch(/^no significant difference/);
    expect(verdict(0, { Welch: 1 }, names)).toMatch(/^no significant difference/);
  });
});
