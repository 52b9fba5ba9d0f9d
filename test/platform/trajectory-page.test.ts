// The trajectories page walks steps, groups and trajectories in index order instead of sorting the
// run: it must answer exactly what the obvious sort-everything query answers, for every filter.
import { describe, expect, it } from "vitest";
import { TEST_STORE, useTempDatabase } from "../helpers/temp-db";

useTempDatabase("trajectory-page");
const { writeRolloutStep, listTrajectories } = await import("@/lib/db/rollouts");
const { createRun } = await import("@/lib/db/runs");
const { runTrajectoryRows, trajectoryPagePlan } = await import("../helpers/db-inspect");

describe("listTrajectories", () => {
  it("pages like ORDER BY step DESC, uid, index over every trajectory, with each filter", () => {
    const mk = (name: string) => createRun({ project: "t", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    const [run, other] = [mk("a"), mk("b")];
    let seed = 3;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    // steps written out of order, uneven groups (uids not in insertion order) and trajectory counts
    for (const r of [run, other])
      for (const step of [3, 0, 7, 1, 5]) {
        const groups = Array.from({ length: 1 + Math.floor(rand() * 4) }, (_, g) => ({
          uid: `u${(g * 7) % 5}-${g}`,
          envId: "e",
          taskSeed: 0,
          trajectories: Array.from({ length: 1 + Math.floor(rand() * 4) }, () => ({
            success: rand() < 0.5,
            truncated: false,
            turns: [{ observation: "o", action: "a", reward: rand(), valid: true, done: false }],
          })),
        }));
        writeRolloutStep(r, { step, groups } as never);
      }
    // the obvious answer: every trajectory of the run, sorted and filtered here
    const all = runTrajectoryRows(run);
    const sorted = [...all].sort((a, b) => b.step - a.step || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0) || a.index - b.index);
    const obvious = (f: { step?: number; groupId?: string; success?: boolean }, limit: number, offset: number) => {
      const hits = sorted.filter(
        (t) => (f.step === undefined || t.step === f.step) && (!f.groupId || t.groupId === f.groupId) && (f.success === undefined || t.success === f.success),
      );
      return { ids: hits.slice(offset, offset + limit).map((t) => t.id), total: hits.length };
    };
    const someGroup = all[3].groupId;
    const filters = [
      {},
      { step: 7 },
      { step: 2 },
      { success: true },
      { success: false, step: 1 },
      { groupId: someGroup },
      { groupId: someGroup, success: true },
    ];
    let compared = 0;
    for (const f of filters)
      for (const [page, pageSize] of [
        [1, 50],
        [1, 3],
        [2, 3],
        [4, 2],
        [9, 5],
      ]) {
        const got = listTrajectories(run, { ...f, page, pageSize });
        const want = obvious(f, pageSize, (page - 1) * pageSize);
        expect({ ids: got.trajectories.map((t) => t.id), total: got.total }, JSON.stringify({ f, page, pageSize })).toEqual(want);
        compared += got.trajectories.length;
      }
    expect(compared).toBeGreaterThan(50);
    // the page is read in index order: no sort of the run's trajectories (SQLite's plan; PostgreSQL plans its own joins)
    if (TEST_STORE === "postgresql") return;
    expect(trajectoryPagePlan(run).join("; ")).not.toMatch(/TEMP B-TREE/);
  });
});
