// The run page's "Evaluate checkpoint" picker offers the steps a training run saves checkpoints
// at (train.ts: every checkpointInterval-th step and the last), among the steps it has stored.
import { describe, expect, it } from "vitest";
import { checkpointStepsOf } from "../../components/runs/checkpoint-eval-panel";

describe("checkpointStepsOf", () => {
  it("lists every checkpointInterval-th stored step and the last step, newest first", () => {
    expect(checkpointStepsOf({ steps: 4, checkpointInterval: 2 }, 4)).toEqual([3, 1]);
    expect(checkpointStepsOf({ steps: 5, checkpointInterval: 2 }, 5)).toEqual([4, 3, 1]);
    expect(checkpointStepsOf({ steps: 2, checkpointInterval: 1 }, 2)).toEqual([1, 0]);
  });

  it("offers only what a running or interrupted run has stored, and nothing for a config without steps", () => {
    expect(checkpointStepsOf({ steps: 100, checkpointInterval: 10 }, 12)).toEqual([9]);
    expect(checkpointStepsOf({ steps: 100, checkpointInterval: 10 }, 0)).toEqual([]);
    expect(checkpointStepsOf(null, 3)).toEqual([]);
  });
});
