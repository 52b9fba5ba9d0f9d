// Metric logging (W&B-shaped: {key: value} at a step) and downsampled series.
import { z } from "zod";
import { batchIdSchema, queryInt } from "./common";

export const metricKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w/.-]+$/, "metric keys use letters, digits, _ . - and / (e.g. rollout/success_rate)");

const stepSchema = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31 - 1);
/**
 * A metric value: a finite number, or one of the three texts a JSON body can carry for the
 * non-finite ones (a NaN loss is when a researcher most needs the logger to keep going).
 * Non-finite values are stored beside the series (MetricNonFinite): charts show a gap, summaries skip them.
 */
export const NON_FINITE_VALUES = ["NaN", "Infinity", "-Infinity"] as const;
export type NonFiniteText = (typeof NON_FINITE_VALUES)[number];
const finite = z.number().refine(Number.isFinite, 'must be a finite number (non-finite values are sent as "NaN", "Infinity" or "-Infinity")');
const metricValue = z.union([finite, z.enum(NON_FINITE_VALUES)]);

/** POST /runs/:id/metrics, one object per log call: `{points: [{step, values: {key: value}}]}`. */
export const metricPointsSchema = z
  .object({
    points: z
      .array(
        z
          .object({
            step: stepSchema,
            values: z.record(metricKeySchema, metricValue),
            wallTime: z.number().positive().optional().describe("Epoch seconds; defaults to the time of the request."),
          })
          .strict(),
      )
      .min(1)
      .max(100_000),
    batchId: batchIdSchema.optional(),
  })
  .strict()
  .meta({ id: "MetricPoints" });

/** Most steps in one columnar batch, and most cells (steps x keys, nulls included). */
export const MAX_COLUMN_STEPS = 100_000;
export const MAX_COLUMN_CELLS = 2_000_000;

/**
 * POST /runs/:id/metrics, columnar: one array per key, aligned with `steps` (null: no value at
 * that step). The same points as `MetricPoints` in a third of the bytes, checked array by array
 * (metricColumnsLookValid) instead of object by object; what the Python client sends.
 */
export const metricColumnsSchema = z
  .object({
    steps: z.array(stepSchema).min(1).max(MAX_COLUMN_STEPS),
    wallTimes: z.array(z.number().positive()).optional().describe("Epoch seconds per step, aligned with `steps`; omitted: the time of the request."),
    values: z
      .record(metricKeySchema, z.array(metricValue.nullable()))
      .describe("metric key -> one value per step (null where the key was not logged); each array as long as `steps`."),
    batchId: batchIdSchema.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const n = b.steps.length;
    if (b.wallTimes && b.wallTimes.length !== n)
      ctx.addIssue({ code: "custom", path: ["wallTimes"], message: `has ${b.wallTimes.length} entries, steps has ${n}: one per step` });
    const keys = Object.keys(b.values);
    for (const k of keys)
      if (b.values[k].length !== n)
        ctx.addIssue({ code: "custom", path: ["values", k], message: `has ${b.values[k].length} entries, steps has ${n}: one per step` });
    if (n * keys.length > MAX_COLUMN_CELLS)
      ctx.addIssue({
        code: "custom",
        path: ["values"],
        message: `${n} steps x ${keys.length} keys is more than ${MAX_COLUMN_CELLS} cells: send fewer steps per request`,
      });
  })
  .meta({ id: "MetricColumns" });
export type MetricColumnsInput = z.infer<typeof metricColumnsSchema>;

/** POST /runs/:id/metrics: either shape; a body with `steps` is columnar. */
export const logMetricsSchema = z.union([metricPointsSchema, metricColumnsSchema]).meta({ id: "LogMetrics" });
export type LogMetrics = z.infer<typeof logMetricsSchema>;

const METRIC_KEY = /^[\w/.-]+$/;
const BATCH_ID = /^[A-Za-z0-9_.:-]+$/;
export const isNonFiniteText = (x: string): x is NonFiniteText => x === "NaN" || x === "Infinity" || x === "-Infinity";
const isStep = (x: unknown) => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 2 ** 31 - 1;

/**
 * True only for a columnar body metricColumnsSchema accepts (test/platform/metric-columns.test.ts
 * checks the two agree): a few loops over plain arrays, ~20x cheaper than the schema on 20,000
 * values. False means "let the schema decide", which names the offending field.
 */
export function metricColumnsLookValid(v: unknown): v is MetricColumnsInput {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const b = v as Record<string, unknown>;
  for (const k in b) if (k !== "steps" && k !== "values" && k !== "wallTimes" && k !== "batchId") return false;
  const { steps, wallTimes, values, batchId } = b;
  if (!Array.isArray(steps) || steps.length < 1 || steps.length > MAX_COLUMN_STEPS) return false;
  const n = steps.length;
  for (let i = 0; i < n; i++) if (!isStep(steps[i])) return false;
  if (wallTimes !== undefined) {
    if (!Array.isArray(wallTimes) || wallTimes.length !== n) return false;
    for (let i = 0; i < n; i++) if (!(typeof wallTimes[i] === "number" && wallTimes[i] > 0 && Number.isFinite(wallTimes[i]))) return false;
  }
  // batchIdSchema's checks without a zod parse (~0.02 ms a request)
  if (batchId !== undefined && !(typeof batchId === "string" && batchId.length >= 1 && batchId.length <= 128 && BATCH_ID.test(batchId))) return false;
  if (values === null || typeof values !== "object" || Array.isArray(values)) return false;
  const keys = Object.keys(values);
  if (n * keys.length > MAX_COLUMN_CELLS) return false;
  for (const k of keys) {
    if (k.length < 1 || k.length > 200 || !METRIC_KEY.test(k)) return false;
    const col = (values as Record<string, unknown>)[k];
    if (!Array.isArray(col) || col.length !== n) return false;
    for (let i = 0; i < n; i++) {
      const x = col[i];
      if (x !== null && !(typeof x === "number" && Number.isFinite(x)) && !(typeof x === "string" && isNonFiniteText(x))) return false;
    }
  }
  return true;
}

/** The schema a metrics body is checked against: columnar when it has `steps` (the two shapes share no field but batchId). */
export function metricBodySchema(v: unknown): typeof metricPointsSchema | typeof metricColumnsSchema {
  return v !== null && typeof v === "object" && "steps" in v ? metricColumnsSchema : metricPointsSchema;
}

export const seriesQuerySchema = z
  .object({
    key: metricKeySchema,
    maxPoints: queryInt(10, 100_000).default(1500).describe("Upper bound on returned points (min/max buckets)."),
    after: queryInt(0, 2 ** 31 - 1)
      .optional()
      .describe("Live cursor: the client already has points up to this step."),
    stride: queryInt(1, 2 ** 30)
      .optional()
      .describe("The stride the client's points were fetched with."),
  })
  .strict();

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
    nonFinite: z
      .array(z.object({ step: z.number(), value: z.enum(NON_FINITE_VALUES) }))
      .optional()
      .describe("Non-finite values logged at or after fromStep (at most 1,000, first first): the chart leaves a gap there."),
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
