// Sweeps through the real routes on a real database: POST /sweeps expands a grid x seeds into runs
// with their queued jobs in one transaction (or writes nothing, naming the field); the compare
// page's grouping of a sweep's runs and its difference of the two groups, computed from the values
// stored for the 6 runs and read back through the full-resolution export, equal scipy 1.17.1's:
//   from scipy import stats; import numpy as np
//   def show(a, b):
//     r = stats.ttest_ind(a, b, equal_var=False); ci = r.confidence_interval(0.95)
//     p = stats.permutation_test((a, b), lambda x, y: abs(np.mean(x) - np.mean(y)),
//           permutation_type="independent", alternative="greater", n_resamples=np.inf).pvalue
//   show([0.625, 0.7, 0.575], [0.45, 0.5, 0.4])   # equal steps (step 3)
//     -> t 3.9513166445890473, p 0.01849124065933528, df 3.8059405940594053,
//        ci (0.051879463046478363, 0.3147872036201882), permutation p 0.1 (2 of 20 splits)
//   show([0.5, 0.55, 0.45], [0.2, 0.28, 0.22])    # equal wall time (25 s after each run's start)
//     -> t 7.098852075328907, p 0.0023471143376149407, df 3.8729739464521558,
//        ci (0.16100715949903416, 0.37232617383429906), permutation p 0.1
import { describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import { routeCaller } from "../helpers/route-call";

useTempDatabase("sweeps");
const sweeps = await import("@/app/api/v1/sweeps/route");
const oneSweep = await import("@/app/api/v1/sweeps/[id]/route");
const runsRoute = await import("@/app/api/v1/runs/route");
const exportRoute = await import("@/app/api/v1/runs/[id]/metrics/export/route");
const { writeMetrics } = await import("@/lib/db/metric-writes");
const { groupRuns, SWEEP_GROUP } = await import("@/lib/charts/prepare-compare");
const { groupDifference, valueAtStep, valueAtElapsed, elapsedSpan } = await import("@/lib/stats/group-difference");
const { countRows } = await import("../helpers/db-inspect");

const call = routeCaller();
const rowCounts = () => ["Run", "Job", "Sweep", "Project"].map((t) => countRows(t));

const SWEEP = {
  jobKind: "baseline",
  name: "gs",
  config: { envId: "frozenlake", episodes: 16, episodesPerBatch: 4 },
  grid: [{ path: "groupSize", values: [4, 8] }],
  seeds: [0, 1, 2],
};

// the value of eval/success at steps 0..3 of each run, in launch order (groupSize 4: s0 s1 s2, groupSize 8: s0 s1 s2);
// the groupSize=4 runs log a step every 10 s, the groupSize=8 ones every 15 s
const VALUES = [
  [0.1, 0.3, 0.5, 0.625],
  [0.2, 0.35, 0.55, 0.7],
  [0.15, 0.25, 0.45, 0.575],
  [0.1, 0.2, 0.35, 0.45],
  [0.12, 0.28, 0.4, 0.5],
  [0.05, 0.22, 0.3, 0.4],
];
const T0 = 1_790_000_000;

describe("POST /sweeps", () => {
  it("refuses a bad sweep naming the field, and writes nothing", async () => {
    const before = rowCounts();
    const cases: [unknown, string][] = [
      [{ ...SWEEP, jobKind: "import" }, "body.jobKind"],
      [{ ...SWEEP, grid: [{ path: "groupSize", values: [4, 4] }] }, "body.grid.0.values.1"],
      [{ ...SWEEP, grid: [{ path: "seed", values: [1] }] }, "body.grid.0.path"],
      [{ ...SWEEP, grid: [{ path: "a;rm -rf", values: [1] }] }, "body.grid.0.path"],
      [{ ...SWEEP, seeds: [0, 0] }, "body.seeds"],
      // 32 x 9 = 288 runs: over the limit of 256
      [{ ...SWEEP, grid: [{ path: "groupSize", values: Array.from({ length: 32 }, (_, i) => i + 1) }], seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8] }, "body.grid"],
      // one point of the grid is out of the baseline schema's range: named by its grid value
      [{ ...SWEEP, grid: [{ path: "groupSize", values: [4, 999] }] }, "body.grid.0.values.1"],
      // the registry refuses a varied environment id
      [{ ...SWEEP, grid: [{ path: "envId", values: ["frozenlake", "nope"] }] }, "body.grid.0.values.1"],
      [{ ...SWEEP, config: { ...SWEEP.config, bogus: 1 } }, "body.config"],
    ];
    for (const [body, field] of cases) {
      const r = await call(sweeps.POST, "POST", "/api/v1/sweeps", { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.issues.map((i: { path: string }) => i.path)).toContain(field);
    }
    expect(rowCounts()).toEqual(before);
  });

  it("launches 2 configs x 3 seeds as 6 queued runs in one sweep, grouped by their grid point", async () => {
    const r = await call(sweeps.POST, "POST", "/api/v1/sweeps", { body: SWEEP });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ name: "gs", jobKind: "baseline", status: { queued: 6 } });
    expect(r.json.runIds).toHaveLength(6);
    expect(countRows("Job")).toBe(6);
    const list = await call(runsRoute.GET, "GET", `/api/v1/runs?sweep=${r.json.id}&sort=name&order=asc`);
    expect(list.json.total).toBe(6);
    const byId = new Map(list.json.runs.map((x: { id: string }) => [x.id, x]));
    const runs = r.json.runIds.map((id: string) => byId.get(id));
    expect(runs.map((x: { name: string }) => x.name)).toEqual([
      "gs/groupSize=4/s0",
      "gs/groupSize=4/s1",
      "gs/groupSize=4/s2",
      "gs/groupSize=8/s0",
      "gs/groupSize=8/s1",
      "gs/groupSize=8/s2",
    ]);
    // each run's config is the base config with its point's value and its seed, as POST /runs stores it (defaults filled)
    expect(runs.map((x: { config: { groupSize: number; seed: number } }) => [x.config.groupSize, x.config.seed])).toEqual([
      [4, 0],
      [4, 1],
      [4, 2],
      [8, 0],
      [8, 1],
      [8, 2],
    ]);
    expect(runs[4]).toMatchObject({ sweepId: r.json.id, sweepParams: { point: { groupSize: 8 }, seed: 1, index: 4 }, seed: 1, status: "queued" });
    expect(Object.keys(runs[0].config.envConfig).length).toBeGreaterThan(0);
    const groups = groupRuns(runs, SWEEP_GROUP);
    expect(groups.map((g) => [g.label, g.runIds.length])).toEqual([
      ["groupSize=4", 3],
      ["groupSize=8", 3],
    ]);
    const got = await call(oneSweep.GET, "GET", `/api/v1/sweeps/${r.json.id}`, { params: { id: r.json.id } });
    expect(got.json.runIds).toEqual(r.json.runIds);
    const all = await call(sweeps.GET, "GET", "/api/v1/sweeps");
    expect(all.json.sweeps.map((s: { id: string }) => s.id)).toEqual([r.json.id]);

    // the stored values, read back at full resolution as the compare page reads them
    r.json.runIds.forEach((id: string, i: number) => {
      const every = i < 3 ? 10 : 15;
      writeMetrics(
        id,
        VALUES[i].map((value, step) => ({ key: "eval/success", step, value, wallTime: T0 + i + every * step })),
      );
    });
    const stored = new Map<string, { steps: number[]; values: number[]; wallTimes: number[] }>();
    for (const id of r.json.runIds) {
      const e = await call(exportRoute.GET, "GET", `/api/v1/runs/${id}/metrics/export?format=columnar&key=eval/success`, { params: { id } });
      stored.set(id, e.json[0]);
    }
    const sample = (at: (s: { steps: number[]; values: number[]; wallTimes: number[] }) => number | undefined) =>
      groups.map((g) => ({ label: g.label, values: g.runIds.map((id) => ({ runId: id, value: at(stored.get(id)!) })) }));

    const [a, b] = sample((s) => valueAtStep(s.steps, s.values, 3));
    const d = groupDifference(a, b);
    if (!d.ok) throw new Error(d.reason);
    expect(d.a.mean).toBeCloseTo(0.6333333333333333, 12);
    expect(d.b.mean).toBeCloseTo(0.45, 12);
    expect(d.welch.t).toBeCloseTo(3.9513166445890473, 9);
    expect(d.welch.df).toBeCloseTo(3.8059405940594053, 9);
    expect(d.welch.p).toBeCloseTo(0.01849124065933528, 8);
    expect(d.welch.ci95[0]).toBeCloseTo(0.051879463046478363, 8);
    expect(d.welch.ci95[1]).toBeCloseTo(0.3147872036201882, 8);
    expect(d.permutation).toEqual({ p: 0.1, exact: true, splits: 20 });

    // equal wall time: each run's value 25 s after its own first point (step 2 of the fast runs, step 1 of the slow ones)
    const atTime = (t: number) => sample((s) => valueAtElapsed(s.wallTimes, s.values, s.wallTimes[0], t));
    const w = groupDifference(...(atTime(25) as [never, never]));
    if (!w.ok) throw new Error(w.reason);
    expect(w.welch.t).toBeCloseTo(7.098852075328907, 9);
    expect(w.welch.df).toBeCloseTo(3.8729739464521558, 9);
    expect(w.welch.p).toBeCloseTo(0.0023471143376149407, 8);
    expect(w.welch.ci95[0]).toBeCloseTo(0.16100715949903416, 8);
    expect(w.welch.ci95[1]).toBeCloseTo(0.37232617383429906, 8);
    // the longest time every run reached: 30 s (the fast runs' last point); past it the fast runs have no value
    expect(Math.min(...[...stored.values()].map((s) => elapsedSpan(s.wallTimes, s.wallTimes[0])))).toBe(30);
    const late = groupDifference(...(atTime(40) as [never, never]));
    expect(late.ok).toBe(false);
    expect(late.a.missing).toEqual(groups[0].runIds);
  });
});
