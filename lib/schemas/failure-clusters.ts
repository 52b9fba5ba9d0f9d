// The failure-clusters route's contract (the clustering itself: lib/credit/failure-clusters.ts).
import { z } from "zod";
import { queryInt } from "./common";

export const failureClustersQuerySchema = z
  .object({
    from: queryInt(0, 1_000_000_000).optional().describe("First step of the range (default: the run's first)."),
    to: queryInt(0, 1_000_000_000).optional().describe("Last step of the range (default: the run's last)."),
    maxClusters: queryInt(2, 12).default(6),
  })
  .strict()
  .refine((q) => q.from === undefined || q.to === undefined || q.from <= q.to, { path: ["from"], message: "must not be after to" });

export const failureClustersSchema = z
  .object({
    runId: z.string(),
    steps: z.array(z.number().int()).describe("The steps read: at most `maxSteps`, evenly spread over the range."),
    perStepLimit: z.number().int().describe("Failed trajectories read a step at most (the first by task uid and index)."),
    trajectories: z.number().int().describe("Failed trajectories clustered."),
    clusters: z.array(
      z.object({
        index: z.number().int(),
        name: z.string().describe("Its centroid's top action n-grams."),
        topNgrams: z.array(z.string()),
        size: z.number().int(),
        perStep: z.array(z.object({ step: z.number().int(), size: z.number().int(), failed: z.number().int() })),
        examples: z.array(z.object({ id: z.string(), step: z.number().int(), groupId: z.string() })),
        flag: z.enum(["new", "growing"]).nullable(),
      }),
    ),
  })
  .meta({ id: "FailureClusters" });
export type FailureClusters = z.output<typeof failureClustersSchema>;
