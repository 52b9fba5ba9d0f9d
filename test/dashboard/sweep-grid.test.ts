// The launch form's sweep mode reads its text inputs into the POST /sweeps body (lib/forms/sweep-grid.ts).
import { describe, expect, it } from "vitest";
import { parseSeeds, parseValues } from "../../lib/forms/sweep-grid";
import { gridPoints, pointLabel, sweepSize } from "../../lib/schemas/sweeps";

describe("sweep text inputs", () => {
  it("reads values as numbers, booleans, null or texts", () => {
    expect(parseValues('0.001, 3e-4, true, null, gigpo, "grpo"')).toEqual({ ok: true, value: [0.001, 3e-4, true, null, "gigpo", "grpo"] });
    expect(parseValues(" , ")).toMatchObject({ ok: false, error: expect.stringContaining("at least one value") });
    expect(parseValues(Array.from({ length: 33 }, (_, i) => i).join(","))).toMatchObject({ ok: false, error: "at most 32 values" });
  });

  it("reads seeds as a list or a range, and names a bad one", () => {
    expect(parseSeeds("0, 1, 2")).toEqual({ ok: true, value: [0, 1, 2] });
    expect(parseSeeds("3-6")).toEqual({ ok: true, value: [3, 4, 5, 6] });
    expect(parseSeeds("6-3")).toMatchObject({ ok: false, error: "the range 6-3 runs backwards" });
    expect(parseSeeds("0, -1")).toMatchObject({ ok: false, error: '"-1" is not a seed (a whole number >= 0)' });
    expect(parseSeeds("0-64")).toMatchObject({ ok: false, error: "at most 64 seeds" });
  });

  it("expands the grid in launch order, the last path fastest", () => {
    const grid = [
      { path: "estimator", values: ["gigpo", "grpo"] },
      { path: "lr", values: [0.001, 0.0003, 0.0001] },
    ];
    const points = gridPoints(grid);
    expect(points.map(pointLabel)).toEqual([
      "estimator=gigpo, lr=0.001",
      "estimator=gigpo, lr=0.0003",
      "estimator=gigpo, lr=0.0001",
      "estimator=grpo, lr=0.001",
      "estimator=grpo, lr=0.0003",
      "estimator=grpo, lr=0.0001",
    ]);
    expect(sweepSize({ grid, seeds: [0, 1, 2] })).toBe(18);
    expect(gridPoints([]).map(pointLabel)).toEqual(["all"]);
  });
});
