// Metric logging (W&B-shaped: {key: value} at a step) and downsampled series.
import { z } from "zod";
import { batchIdSchema, queryInt } from "./common";

export const metricKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w/.-]+$/, "metric keys use letters, digits, _ . - and / (e.g. rollout/success_rate)");

/** POST /runs/:id/metrics — one or more log calls: `{step, values: {key: value}}`. */
export const logMetricsSchema = z
  .object({
    points: z
      .array(
        z
          .object({
            step: z.number().int().min(0).max(2 ** 31 - 1),
            values: z.record(metricKeySchema, z.number().refine(Number.isFinite, "must be a finite number")),
            wallTime: z.number().positive().optional().describe("Epoch seconds; defaults to the time of the request."),
          })
          .strict(),
      )
      .min(1)
      .max(100_000),
    batchId: batchIdSchema.optional(),
  })
  .strict()
  .meta({ id: "LogMetrics" });
export type LogMetrics = z.infer<typeof logMetricsSchema>;

export const seriesQuerySchema = z
  .object({
    key: metricKeySchema,
    maxPoints: queryInt(10, 100_000).default(1500).describe("Upper bound on returned points (min/max buckets)."),
    after: queryInt(0, 2 ** 31 - 1).optional().describe("Live cursor: the client already has points up to this step."),
    stride: queryInt(1, 2 ** 30).optional().describe("The stride the client's points were fetched with."),
  })
  .strict();
export type SeriesQuery = z.infer<typeof seriesQuerySchema>;

export const seriesSchema = z
  .object({
    key: z.string(),
    stride: z.number().describe("Bucket width in steps (a power of two; stable while the run grows)."),
    reset: z.boolean().describe("True when the client must drop its points (first fetch or stride changed)."),
    fromStep: z.number().describe("Points at or after this step replace the client's."),
    count: z.number().describe("Number of stored points in the full series."),
    steps: z.array(z.number()),
    values: z.array(z.number()),
    wallTimes: z.array(z.number()).optional(),
  })
  .meta({ id: "Series" });
export type Series = z.infer<typeof seriesSchema>;

export const metricKeyInfoSchema = z.object({
  key: z.string(),
  count: z.number(),
  firstStep: z.number(),
  lastStep: z.number(),
  lastValue: z.number(),
  minValue: z.number(),
  maxValue: z.number(),
});
export type MetricKeyInfo = z.infer<typeof metricKeyInfoSchema>;
