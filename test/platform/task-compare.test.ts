// Two runs on the same tasks (lib/runs/task-compare.ts): each task lands in the category a scan of
// both runs' trajectories gives, matched by task seed, or by uid when a trainer sent no seeds.
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import type { RolloutStepInput } from "@/lib/schemas/rollouts";

const tmp = useTempDatabase("task-compare");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep } = await import("@/lib/db/rollouts");
const { compareTasks } = await import("@/lib/runs/task-compare");
const { NotFoundError } = await import("@/lib/schemas/errors");
afterAll(() => tmp.cleanup());

const newRun = (name: string) => createRun({ project: "t", name, kind: "imported", jobKind: null, config: {}, envId: "frozenlake", status: "running" }).runId;

/** `wins[s][k]` = successes of task k's trajectories at step s (of 2); uids per step like the trainer's */
function write(runId: string, wins: boolean[][][], seeds = true) {
  wins.forEach((tasks, s) => {
    writeRolloutStep(runId, {
      step: s,
      groups: tasks.map((traj, k) => ({
        uid: seeds ? `s${s}-g${k}` : `task-${k}`,
        envId: "frozenlake",
        taskSeed: seeds ? 100 + k : 0,
        trajectories: traj.map((ok) => ({
          success: ok,
          truncated: false,
          turns: [{ observation: "o", action: "a", reward: ok ? 1 : 0, valid: true, done: true }],
        })),
      })),
    } satisfies RolloutStepInput);
  });
}

describe("compareTasks", () => {
  it("puts each task where a scan of both runs puts it, with both runs' counts and a trajectory of each", () => {
    const [a, b] = [newRun("a"), newRun("b")];
    const F = false;
    const T = true;
    // tasks 0..4 over two steps: A solves 1 and 3, B solves 0, 3 and 4
    write(a, [
      [
        [F, F],
        [F, T],
        [F, F],
        [T, T],
        [F, F],
      ],
      [
        [F, F],
        [F, F],
        [F, F],
        [F, T],
        [F, F],
      ],
    ]);
    write(b, [
      [
        [F, T],
        [F, F],
        [F, F],
        [T, F],
        [F, F],
      ],
      [
        [F, F],
        [F, F],
        [F, F],
        [F, F],
        [T, F],
      ],
    ]);
    const c = compareTasks(a, b);
    expect(c.matchedBy).toBe("taskSeed");
    const keys = (xs: { taskSeed: number }[]) => xs.map((x) => x.taskSeed);
    expect(keys(c.newlySolved)).toEqual([100, 104]);
    expect(keys(c.newlyFailed)).toEqual([101]);
    expect(keys(c.persistentFailures)).toEqual([102]);
    expect(keys(c.stillSolved)).toEqual([103]);
    const t3 = c.stillSolved[0];
    expect([t3.a, t3.b].map((x) => [x!.trajectories, x!.successes])).toEqual([
      [4, 3],
      [4, 1],
    ]);
    expect(c.onlyA + c.onlyB).toBe(0);
  });

  it("matches by uid when a run's groups share one seed, and counts tasks only one run played", () => {
    const [a, b] = [newRun("a2"), newRun("b2")];
    write(a, [[[false], [true], [false]]], false);
    write(b, [[[true], [true]]], false);
    const c = compareTasks(a, b);
    expect(c.matchedBy).toBe("uid");
    expect(c.newlySolved.map((t) => t.uid)).toEqual(["task-0"]);
    expect(c.stillSolved.map((t) => t.uid)).toEqual(["task-1"]);
    expect([c.onlyA, c.onlyB]).toEqual([1, 0]);
  });

  it("names an unknown run", () => {
    expect(() => compareTasks("nope", "nope2")).toThrow(NotFoundError);
  });
});
