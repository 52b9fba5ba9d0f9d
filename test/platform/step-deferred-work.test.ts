// A stored step's deferred work (its search index and credit summary, lib/ingest/deferred.ts) runs
// after ingest answers. A process killed between the step's write and that work leaves the step
// readable and marked pending; the next start (lib/runs/pending-steps.ts, run by the web server
// before it serves) finds the mark and does the work, giving what the uninterrupted path gives.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, useTempDatabase } from "../helpers/temp-db";
import type { RolloutStepInput } from "@/lib/schemas/rollouts";

const tmp = useTempDatabase("step-deferred-work");
const { createRun } = await import("@/lib/db/runs");
const { listSteps, getTrajectory, listTrajectories } = await import("@/lib/db/rollouts");
const { pendingSteps, readStepSummaries, stepPending } = await import("@/lib/db/credit-summary");
const { countRows } = await import("../helpers/db-inspect");
const { searchTrajectories } = await import("@/lib/db/trajectory-search");
const { trajectorySearchQuerySchema } = await import("@/lib/schemas/search");
const { finishPendingSteps } = await import("@/lib/runs/pending-steps");
const { summarizeStepInput } = await import("@/lib/schemas/step-summary");
const { rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");
afterAll(() => tmp.cleanup());

const newRun = (name: string) =>
  createRun({ project: "t", name, kind: "imported", jobKind: null, config: {}, envId: "alfworld", estimator: "gigpo", status: "running" }).runId;

/** A small step: 2 tasks x 3 trajectories x 4 turns, each trajectory with a word of its own. */
const step = (n: number): RolloutStepInput =>
  rolloutStepInputSchema.parse({
    step: n,
    estimator: "gigpo",
    groups: [0, 1].map((g) => ({
      uid: `task-${g}`,
      envId: "alfworld",
      taskSeed: g,
      trajectories: [0, 1, 2].map((t) => ({
        success: t === 0,
        turns: [0, 1, 2, 3].map((k) => ({
          observation: `You see a drawer ${k}. Marker w${n}g${g}t${t}`,
          action: `open drawer ${k}`,
          reward: k === 3 && t === 0 ? 1 : 0,
          anchor: `s${k}`,
          advantage: (t - 1) * 0.5 + k * 0.1,
          entropy: 0.3 + k * 0.05,
        })),
      })),
    })),
  });

/** Stores `input` in a child process through the ingest entry; "die" kills it right after the answer. */
function ingestInChild(runId: string, input: RolloutStepInput, mode: "die" | "finish") {
  const file = path.join(tmp.dir, `step-${input.step}.json`);
  fs.writeFileSync(file, JSON.stringify(input));
  return spawnSync(process.execPath, ["--import", "tsx", "test/helpers/ingest-step-child.ts", runId, file, mode], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: tmp.url },
    encoding: "utf8",
  });
}

const search = async (runId: string, text: string) =>
  (await searchTrajectories(trajectorySearchQuerySchema.parse({ runs: runId, text }))).trajectories.map((h) => h.id);

describe("a step's deferred work", () => {
  it("is done after the answer by the process that stored the step", () => {
    const runId = newRun("finish");
    const r = ingestInChild(runId, step(0), "finish");
    expect(r.status, r.stderr).toBe(0);
    const stepId = listSteps(runId).steps[0].id;
    expect(stepPending(stepId)).toBe(false);
    expect(countRows("TrajectorySearch", runId)).toBe(6);
    expect(readStepSummaries([stepId]).get(stepId)).toEqual(JSON.parse(JSON.stringify(summarizeStepInput(step(0)))));
  });

  it("of a step with tokens gives the summary of the whole step (token entropies where a turn has no entropy of its own)", () => {
    const runId = newRun("tokens");
    const s = step(1);
    for (const [gi, g] of s.groups.entries())
      for (const [ti, t] of g.trajectories.entries())
        for (const [k, u] of t.turns.entries()) {
          u.tokenIds = [1, 2, 3];
          u.tokenLogprobs = [-0.1, -0.2, -0.3];
          u.tokenEntropies = [0.1 * (gi + 1), 0.2 * (ti + 1), 0.3 * (k + 1)];
          if ((gi + ti + k) % 2) u.entropy = null;
        }
    const input = rolloutStepInputSchema.parse(s);
    const r = ingestInChild(runId, input, "finish");
    expect(r.status, r.stderr).toBe(0);
    const stepId = listSteps(runId).steps[0].id;
    const want = JSON.parse(JSON.stringify(summarizeStepInput(input)));
    expect(want.entCount.reduce((a: number, b: number) => a + b, 0)).toBe(24);
    expect(readStepSummaries([stepId]).get(stepId)).toEqual(want);
  });

  it("cut off by a kill, is found and done at the next start, as the uninterrupted path does it", async () => {
    const runId = newRun("killed");
    const r = ingestInChild(runId, step(0), "die");
    expect(r.signal).toBe("SIGKILL");
    // the step is stored and readable; its index and summary are not made, its mark says so
    const stepId = listSteps(runId).steps[0].id;
    const ids = listTrajectories(runId).trajectories.map((t) => t.id);
    expect(ids).toHaveLength(6);
    expect(getTrajectory(ids[0])!.turns).toHaveLength(4);
    expect(pendingSteps().map((p) => p.stepId)).toEqual([stepId]);
    expect(countRows("TrajectorySearch", runId)).toBe(0);
    expect(readStepSummaries([stepId]).size).toBe(0);

    // the next start
    expect(finishPendingSteps()).toBe(1);
    expect(pendingSteps()).toEqual([]);
    expect(countRows("TrajectorySearch", runId)).toBe(6);
    expect(readStepSummaries([stepId]).get(stepId)).toEqual(JSON.parse(JSON.stringify(summarizeStepInput(step(0)))));
    const traj = listTrajectories(runId, { pageSize: 50 }).trajectories.find((t) => t.uid === "task-1" && t.index === 2)!;
    expect(await search(runId, "w0g1t2")).toEqual([traj.id]);
    // a second start finds nothing to do
    expect(finishPendingSteps()).toBe(0);
  }, 60_000);
});
