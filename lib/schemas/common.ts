// Shared building blocks of the API schemas (one source of truth for API, worker, UI and CLI).
import { z } from "zod";

export const idSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_-]+$/, "must be an id (letters, digits, _ or -)");

/**
 * How a schema appears in the OpenAPI document when zod's own JSON Schema would say less than the
 * schema checks: a query integer parses text but is documented as the integer range it accepts.
 */
export const documentedAs = new WeakMap<z.ZodType, Record<string, unknown>>();

/**
 * Query-string and path integers arrive as text: plain decimal only (an empty value, "0x10" or
 * "1e3" is a 400, not a silent 0 or 16), then range-checked.
 */
export const queryInt = (min: number, max: number) => {
  const s = z
    .string()
    .regex(/^-?\d{1,15}$/, "must be a decimal integer")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
  documentedAs.set(s, { type: "integer", minimum: min, maximum: max });
  return s;
};

export const errorSchema = z
  .object({
    error: z.string().describe("What went wrong, in one sentence."),
    issues: z
      .array(z.object({ path: z.string().describe("The offending field, e.g. body.config.episodes"), message: z.string() }))
      .describe("One entry per invalid field."),
  })
  .meta({ id: "Error" });

/** A run's and a job's statuses: the one list (a run's status follows its job's). */
export const STATUSES = ["queued", "running", "succeeded", "failed", "canceled"] as const;
/** Statuses a run or job ends in. */
export const TERMINAL_STATUSES = ["succeeded", "failed", "canceled"] as const satisfies readonly (typeof STATUSES)[number][];
/** Statuses of work not finished yet (the dashboard polls while any is shown). */
export const ACTIVE_STATUSES = ["queued", "running"] as const satisfies readonly (typeof STATUSES)[number][];
export const runStatusSchema = z.enum(STATUSES);

export const runKindSchema = z.enum(["train", "eval", "imported"]);

/** A client's batch id: a retried write with the same id and content is stored once. */
export const batchIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.:-]+$/, "batch ids use letters, digits, _ . : -")
  .describe("Client batch id: a retry with the same id and the same content is answered with the stored result (200); other content is a 409.");

export const tagsSchema = z.array(z.string().min(1).max(64)).max(32).default([]);

/** The body of an action that takes no input (cancel, retry, resume): `{}`, sent as JSON like every write. */
export const emptyBodySchema = z.object({}).strict().meta({ id: "Empty" });
