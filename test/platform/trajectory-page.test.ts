// The trajectories page walks steps, groups and trajectories in index order instead of sorting the
// run: it must answer exactly what the obvious sort-everything query answers, for every filter.
import { describe, expect, it } from "vitest";
import { TEST_STORE, useTempDatabase } from "../helpers/temp-db";

useTempDatabase("trajectory-page");
const { writeRolloutStep, listTrajectories } = await import("@/lib/db/rollouts");
const { createRun } = await import("@/lib/db/runs");
const { getRawDb } = await import("@/lib/db/raw");

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
    const obvious = (f: { step?: number; groupId?: string; success?: boolean }, limit: number, offset: number) => {
      const where = [`t."runId" = ?`];
      const args: unknown[] = [run];
      if (f.step !== undefined) where.push(`s."step" = ?`), args.push(f.step);
      if (f.groupId) where.push(`t."groupId" = ?`), args.push(f.groupId);
      if (f.success !== undefined) where.push(`t."success" = ?`), args.push(f.success ? 1 : 0);
      const from = `FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId" WHERE ${where.join(" AND ")}`;
      const ids = getRawDb()
        .prepare(`SELECT t."id" ${from} ORDER BY s."step" DESC, g."uid", t."index" LIMIT ? OFFSET ?`)
        .pluck()
        .all(...args, limit, offset);
      const total = getRawDb()
        .prepare(`SELECT COUNT(*) ${from}`)
        .pluck()
        .get(...args);
      return { ids, total };
    };
    const someGroup = getRawDb().prepare(`SELECT "groupId" FROM "Trajectory" WHERE "runId" = ? LIMIT 1 OFFSET 3`).pluck().get(run) as string;
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
    const plan = getRawDb()
      .prepare(
        `EXPLAIN QUERY PLAN SELECT t."id" FROM "RolloutStep" s CROSS JOIN "RolloutGroup" g ON g."stepId" = s."id" CROSS JOIN "Trajectory" t ON t."groupId" = g."id" WHERE s."runId" = ? ORDER BY s."step" DESC, g."uid", t."index" LIMIT 50`,
      )
      .all(run) as { detail: string }[];
    expect(plan.map((p) => p.detail).join("; ")).not.toMatch(/TEMP B-TREE/);
  });
});
