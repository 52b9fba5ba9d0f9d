// GET /runs/{id}/turns pages every turn of a run in write order by a cursor, while turns are stored
// packed in their trajectories' rows: any cursor and page size must give exactly the turns a scan
// of every trajectory gives, across trajectory and step boundaries (checked on both stores).
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("turns-page");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep, turnsPage, listTrajectories, getTrajectory } = await import("@/lib/db/rollouts");
afterAll(() => tmp.cleanup());

describe("turnsPage", () => {
  it("gives, for every cursor and page size, the turns a scan of every trajectory gives", () => {
    const runId = createRun({ project: "p", name: "r", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    // trajectories of 1-7 turns over three steps, two groups each
    let k = 0;
    for (let step = 0; step < 3; step++)
      writeRolloutStep(runId, {
        step,
        groups: [0, 1].map((g) => ({
          uid: `g${g}`,
          envId: "sokoban",
          taskSeed: g,
          trajectories: [0, 1, 2].map(() => ({
            success: false,
            truncated: false,
            turns: Array.from({ length: 1 + (k++ % 7) }, (_, i) => ({ observation: `s${step} t${k} #${i}`, action: "a", reward: i, valid: true, done: false })),
          })),
        })),
      });
    const all = listTrajectories(runId, { pageSize: 200 })
      .trajectories.flatMap((t) => getTrajectory(t.id)!.turns)
      .sort((a, b) => a.seq - b.seq);
    expect(all.map((u) => u.seq)).toEqual(all.map((_, i) => i)); // one numbering across the run
    for (const limit of [1, 3, 7, 50, 1000])
      for (let after = -1; after <= all.length; after++) {
        const page = turnsPage(runId, after, limit);
        const want = all.filter((u) => u.seq > after).slice(0, limit);
        expect(page.turns).toEqual(want);
        expect(page.next).toBe(want.length === limit ? want[want.length - 1].seq : null);
      }
  });
});
