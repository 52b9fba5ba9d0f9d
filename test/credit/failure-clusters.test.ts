// Failure clusters (lib/credit/failure-clusters.ts) on two planted failure modes with noise: the
// modes come out as separate clusters, a rerun (and a shuffled input) gives the same clusters, and
// the mode that only appears late is flagged "new".
import { describe, expect, it } from "vitest";
import { actionTerm, clusterFailures, type FailedTrajectory } from "@/lib/credit/failure-clusters";

let seed = 7;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
const NOISE = ["inventory", "examine room", "go to shelf 2", "wait"];

/** Mode "loop": looks around again and again. Mode "misplace": takes an object and puts it in the wrong receptacle. */
function trajectory(mode: "loop" | "misplace", step: number, i: number): FailedTrajectory {
  const n = 1 + Math.floor(rand() * 9);
  const core =
    mode === "loop"
      ? Array.from({ length: 6 + Math.floor(rand() * 4) }, () => "look")
      : [`go to drawer ${n}`, `open drawer ${n}`, `take key ${n} from drawer ${n}`, `go to sofa ${n}`, `put key ${n} in sofa ${n}`];
  const actions = [...core];
  for (let k = 0; k < 2; k++) actions.splice(Math.floor(rand() * actions.length), 0, pick(NOISE));
  return { id: `${mode}-${step}-${i}`, step, actions };
}

/** Steps 0-8: "loop" failures throughout, "misplace" ones from step 6 on. */
function planted(): FailedTrajectory[] {
  seed = 7;
  const out: FailedTrajectory[] = [];
  for (let step = 0; step < 9; step++) {
    for (let i = 0; i < 12; i++) out.push(trajectory("loop", step, i));
    if (step >= 6) for (let i = 0; i < 10; i++) out.push(trajectory("misplace", step, i));
  }
  return out;
}

describe("failure clusters", () => {
  it("separate two planted failure modes, each cluster one mode, the late one flagged new", () => {
    const clusters = clusterFailures(planted(), { maxClusters: 6 });
    const modes = clusters.map((c) => new Set(c.examples.map((id) => id.split("-")[0])));
    expect(clusters.length).toBeGreaterThanOrEqual(2);
    // every cluster holds one mode only: its members by id prefix
    const all = planted();
    const members = (c: (typeof clusters)[number]) => c.perStep.reduce((s, p) => s + p.size, 0);
    expect(clusters.reduce((s, c) => s + members(c), 0)).toBe(all.length);
    for (const m of modes) expect(m.size).toBe(1);
    const loop = clusters.filter((c) => c.examples[0].startsWith("loop"));
    const misplace = clusters.filter((c) => c.examples[0].startsWith("misplace"));
    expect(loop.reduce((s, c) => s + c.size, 0)).toBe(9 * 12);
    expect(misplace.reduce((s, c) => s + c.size, 0)).toBe(3 * 10);
    expect(loop[0].name).toContain("look > look");
    expect(misplace[0].topNgrams.join(" ")).toMatch(/drawer #|key #|sofa #/);
    expect(misplace.every((c) => c.flag === "new")).toBe(true);
    expect(loop.every((c) => c.flag === null)).toBe(true);
    expect(misplace[0].perStep.map((p) => p.size > 0)).toEqual([false, false, false, false, false, false, true, true, true]);
  });

  it("are the same on a rerun and whatever the input order", () => {
    const a = clusterFailures(planted());
    const shuffled = [...planted()].sort(() => rand() - 0.5);
    expect(clusterFailures(planted())).toEqual(a);
    expect(clusterFailures(shuffled)).toEqual(a);
  });

  it("name an action by the words of its command, numbers as #", () => {
    expect(actionTerm("Open Drawer 12!")).toBe("open drawer #");
    expect(actionTerm("Think: the mug may be on desk 2.\nAction: go to desk 2\n")).toBe("go to desk #");
    expect(clusterFailures([])).toEqual([]);
  });
});
