// Job status, the jobs list and log tail.
import { z } from "zod";
import { queryInt, STATUSES } from "./common";

export const jobStatusSchema = z.enum(STATUSES);
const STATUS_RE = STATUSES.join("|");

export const jobSchema = z
  .object({
    id: z.string(),
    runId: z.string().nullable(),
    kind: z.string(),
    status: jobStatusSchema,
    priority: z.number().int().describe("Higher is claimed first; ties in creation order."),
    timeoutMs: z.number().int().nullable().describe("Wall-clock limit of one attempt in ms; null: none."),
    attempts: z.number(),
    maxAttempts: z.number(),
    progress: z.number(),
    progressMessage: z.string(),
    cancelRequested: z.boolean(),
    error: z.string().nullable(),
    leaseOwner: z.string().nullable(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .meta({ id: "Job" });
export type JobOut = z.infer<typeof jobSchema>;

export const jobListQuerySchema = z
  .object({
    status: z
      .string()
      .max(200)
      // the grammar, also in the OpenAPI document; its message lists the statuses
      .regex(new RegExp(`^ *((${STATUS_RE}) *(, *(${STATUS_RE}) *)*)?$`), `must be statuses (${STATUSES.join(", ")}) separated by commas`)
      .optional()
      .transform((s, ctx) => {
        if (s === undefined || s.trim() === "") return undefined;
        const parts = s
          .split(",")
          .map((p) => p.trim())
          .filter(Boolean);
        const bad = parts.filter((p) => !jobStatusSchema.options.includes(p as never));
        if (bad.length) {
          ctx.addIssue({ code: "custom", message: `unknown status ${bad.map((b) => `"${b}"`).join(", ")}; known: ${jobStatusSchema.options.join(", ")}` });
          return z.NEVER;
        }
        return [...new Set(parts)] as z.infer<typeof jobStatusSchema>[];
      })
      .describe("Comma-separated statuses, e.g. `queued,running`; none: every status."),
    kind: z.string().min(1).max(64).optional().describe("Only jobs of this kind."),
    runId: z.string().min(1).max(64).optional().describe("Only the jobs of this run."),
    page: queryInt(1, 1_000_000).default(1),
    pageSize: queryInt(1, 500).default(50),
  })
  .strict();

export const jobListSchema = z
  .object({
    jobs: z.array(jobSchema),
    total: z.number().int().describe("Jobs matching the filters, over all pages."),
    page: z.number().int(),
    pageSize: z.number().int(),
  })
  .describe("Queued jobs in the order the queue claims them (priority desc, availableAt, createdAt); others most recent first.")
  .meta({ id: "JobList" });
export type JobList = z.infer<typeof jobListSchema>;

export const logQuerySchema = z
  .object({
    after: queryInt(-1, 2 ** 31 - 1)
      .default(-1)
      .describe("Return lines with seq greater than this."),
    limit: queryInt(1, 5000).default(500),
  })
  .strict();

export const logLinesSchema = z
  .object({
    lines: z.array(z.object({ seq: z.number(), time: z.number(), level: z.string(), line: z.string() })),
    next: z.number().describe("Pass as `after` to get only newer lines."),
  })
  .meta({ id: "LogLines" });
export type LogLines = z.infer<typeof logLinesSchema>;
