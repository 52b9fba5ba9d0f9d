// pass@k as the checkpoint-eval job computes it, against its definition: the share of the
// C(n, k) ways to pick k of n sampled episodes that hold at least one success, enumerated.
import { describe, expect, it } from "vitest";
import { passAtK } from "../../workers/runners/eval-batches";
import { scoreTasks } from "../../workers/runners/checkpoint-eval";
import { checkpointEvalConfigSchema } from "../../lib/schemas/runs";

/** pass@k by enumerating every k-subset of n episodes whose first c succeeded. */
function enumerated(n: number, c: number, k: number): number {
  let hit = 0;
  let all = 0;
  const pick = (from: number, left: number, any: boolean) => {
    if (left === 0) {
      all++;
      if (any) hit++;
      return;
    }
    for (let i = from; i <= n - left; i++) pick(i + 1, left - 1, any || i < c);
  };
  pick(0, k, false);
  return hit / all;
}

describe("passAtK", () => {
  it("is 1 - C(n-c, k) / C(n, k): every n <= 10, c, k against the enumeration", () => {
    for (let n = 1; n <= 10; n++)
      for (let k = 1; k <= n; k++) for (let c = 0; c <= n; c++) expect(passAtK(n, c, k), `n=${n} c=${c} k=${k}`).toBeCloseTo(enumerated(n, c, k), 12);
    // closed forms: 1 - C(6,3)/C(10,3) = 1 - 20/120; with k = 1 it is the success share
    expect(passAtK(10, 4, 3)).toBeCloseTo(1 - 20 / 120, 15);
    expect(passAtK(7, 3, 1)).toBeCloseTo(3 / 7, 15);
  });

  it("with n = k is whether any sample succeeded, and stays finite for large n", () => {
    for (const k of [1, 2, 5, 16]) {
      expect(passAtK(k, 0, k)).toBe(0);
      for (let c = 1; c <= k; c++) expect(passAtK(k, c, k)).toBe(1);
    }
    // C(1000, 500) overflows a double; the product form does not
    const p = passAtK(1000, 3, 500);
    expect(p).toBeGreaterThan(0.87);
    expect(p).toBeLessThan(0.88); // 1 - (500*499*498)/(1000*999*998)
    expect(p).toBeCloseTo(1 - (500 * 499 * 498) / (1000 * 999 * 998), 12);
  });

  it("refuses impossible counts, naming them", () => {
    expect(() => passAtK(3, 1, 4)).toThrow(/n=3, c=1, k=4/);
    expect(() => passAtK(3, 4, 2)).toThrow(RangeError);
    expect(() => passAtK(3, 1, 0)).toThrow(RangeError);
  });
});

describe("scoreTasks", () => {
  it("averages pass@k over tasks and success over episodes, greedy and sampled apart", () => {
    const s = scoreTasks(
      [
        { mode: "greedy", index: 0, n: 1, c: 1, reward: 1 },
        { mode: "greedy", index: 1, n: 1, c: 0, reward: -0.5 },
        { mode: "sampled", index: 0, n: 4, c: 1, reward: 1 },
        { mode: "sampled", index: 1, n: 4, c: 0, reward: 0 },
      ],
      2,
    );
    expect(s.greedy).toEqual({ tasks: 2, success: 0.5, meanReturn: 0.25 });
    expect(s.sampled!.passAtK).toBeCloseTo((passAtK(4, 1, 2) + 0) / 2, 15);
    expect(s.sampled!.passAtK).toBeCloseTo(0.25, 15); // 1 - C(3,2)/C(4,2) = 1/2, averaged with 0
    expect(s.sampled).toMatchObject({ tasks: 2, k: 2, successRate: 1 / 8, meanReturn: 1 / 8 });
    expect(scoreTasks([], 2)).toEqual({ greedy: null, sampled: null });
  });
});

describe("checkpointEvalConfigSchema", () => {
  it("names the field of a config that cannot give pass@k or plays nothing", () => {
    const bad = (config: Record<string, unknown>) => {
      const r = checkpointEvalConfigSchema.safeParse({ sourceRunId: "r", ...config });
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    };
    expect(bad({ sampled: true, k: 4, samples: 3 })).toEqual(["samples: must be at least k (4): pass@k needs k samples per task"]);
    expect(bad({ greedy: false })).toEqual(["sampled: pick greedy, sampled or both"]);
    expect(bad({ sampled: true, k: 4, samples: 8 })).toEqual([]);
    expect(checkpointEvalConfigSchema.parse({ sourceRunId: "r" })).toMatchObject({
      checkpointStep: null,
      greedy: true,
      sampled: false,
      k: 4,
      samples: null,
      temperature: null,
    });
  });
});
