// One task across training: its trajectories at every step of some runs (GET /tasks/timeline), and
// two trajectories side by side with their turns aligned (GET /trajectories/diff).
import { z } from "zod";
import { idSchema, queryInt } from "./common";

/** Longest prompt a timeline is asked for (it travels in a URL): longer first observations are found by uid or seed. */
export const MAX_PROMPT = 4000;

export const taskTimelineQuerySchema = z
  .object({
    runs: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}(,[A-Za-z0-9_-]{1,64}){0,9}$/, "must be 1 to 10 comma-separated run ids")
      .transform((s) => s.split(","))
      .describe("Comma-separated run ids."),
    task: z.string().min(1).max(200).optional().describe("The task group's uid."),
    seed: queryInt(-(2 ** 31), 2 ** 31 - 1)
      .optional()
      .describe("The task's seed (instead of `task`), with `envId` where several environments share seeds."),
    envId: z.string().min(1).max(100).optional(),
    prompt: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(MAX_PROMPT, `must be at most ${MAX_PROMPT} characters`)
      .optional()
      .describe("The task's prompt (instead of `task` or `seed`): its trajectories whose first observation is this text, compared trimmed."),
  })
  .strict()
  .refine((q) => [q.task, q.seed, q.prompt].filter((v) => v !== undefined).length === 1, {
    message: "give exactly one of task, seed or prompt",
    path: ["task"],
  });
export type TaskTimelineQuery = z.output<typeof taskTimelineQuerySchema>;

export const timelineTrajectorySchema = z.object({
  id: z.string(),
  index: z.number(),
  success: z.boolean(),
  reward: z.number(),
  length: z.number(),
  meanAdvantage: z.number().nullable().describe("Mean of its turns' stored advantages; null without any."),
});

export const timelineStepSchema = z.object({
  step: z.number(),
  uid: z.string(),
  trajectories: z.array(timelineTrajectorySchema),
  successRate: z.number(),
  meanReturn: z.number(),
  meanLength: z.number(),
  meanAdvantage: z.number().nullable(),
});
export type TimelineStep = z.infer<typeof timelineStepSchema>;

export const taskTimelineSchema = z
  .object({
    runs: z.array(z.object({ id: z.string(), name: z.string(), steps: z.array(timelineStepSchema) })),
  })
  .meta({ id: "TaskTimeline" });
export type TaskTimeline = z.infer<typeof taskTimelineSchema>;

export const trajectoryDiffQuerySchema = z.object({ a: idSchema, b: idSchema }).strict();

const diffSide = z.object({
  id: z.string(),
  runId: z.string(),
  runName: z.string(),
  step: z.number(),
  uid: z.string(),
  index: z.number(),
  success: z.boolean(),
  reward: z.number(),
  length: z.number(),
});

const diffTurn = z.object({ observation: z.string(), action: z.string(), reward: z.number(), advantage: z.number().nullable() }).nullable();

export const trajectoryDiffSchema = z
  .object({
    a: diffSide,
    b: diffSide,
    turns: z.array(
      z.object({
        index: z.number(),
        a: diffTurn.describe("null: a has no turn at this index."),
        b: diffTurn,
        differs: z.boolean().describe("The two actions differ (or only one trajectory has this turn)."),
      }),
    ),
    differing: z.number().describe("Turns whose actions differ."),
  })
  .meta({ id: "TrajectoryDiff" });
export type TrajectoryDiff = z.infer<typeof trajectoryDiffSchema>;
