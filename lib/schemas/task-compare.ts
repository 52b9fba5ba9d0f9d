// Two runs (or two evaluations) on the same tasks: which tasks the second newly solves, newly
// fails, or fails like the first (GET /compare/tasks).
import { z } from "zod";
import { idSchema } from "./common";

export const taskCompareQuerySchema = z
  .object({
    a: idSchema.describe("The earlier run (or evaluation)."),
    b: idSchema.describe("The later run (or evaluation) on the same tasks."),
  })
  .strict();

const side = z
  .object({
    trajectories: z.number().describe("Trajectories of this task in the run (every step)."),
    successes: z.number(),
    /** a trajectory to open: the first success, else the first failure */
    trajectoryId: z.string(),
  })
  .nullable();

export const taskOutcomeSchema = z
  .object({
    key: z.string().describe("How the task was matched: envId:taskSeed, or the group uid where seeds do not tell tasks apart."),
    envId: z.string(),
    taskSeed: z.number(),
    uid: z.string(),
    a: side,
    b: side,
  })
  .meta({ id: "TaskOutcome" });
export type TaskOutcome = z.infer<typeof taskOutcomeSchema>;

export const taskCompareSchema = z
  .object({
    a: z.object({ id: z.string(), name: z.string() }),
    b: z.object({ id: z.string(), name: z.string() }),
    matchedBy: z.enum(["taskSeed", "uid"]).describe("taskSeed: environment and task seed (held-out instances); uid: the group uid."),
    /** a task is solved in a run when any of its trajectories succeeded */
    newlySolved: z.array(taskOutcomeSchema),
    newlyFailed: z.array(taskOutcomeSchema),
    persistentFailures: z.array(taskOutcomeSchema),
    stillSolved: z.array(taskOutcomeSchema),
    /** tasks only one of the two runs played */
    onlyA: z.number(),
    onlyB: z.number(),
  })
  .meta({ id: "TaskCompare" });
export type TaskCompare = z.infer<typeof taskCompareSchema>;
