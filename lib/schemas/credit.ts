// Query schemas of the credit routes (`?estimator=&params=`, the overview's step and turn caps):
// HTTP input, so they live with the other request schemas, not beside the SQL in lib/db/credit.ts.
import { z } from "zod";
import { ESTIMATOR_IDS } from "../credit/registry";
import { queryInt } from "./common";

const paramsJson = z
  .string()
  .max(1000)
  .transform((s, ctx) => {
    try {
      const v = JSON.parse(s);
      if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      /* reported below */
    }
    ctx.addIssue({ code: "custom", message: 'must be a JSON object of estimator parameters, e.g. {"gamma":0.9}' });
    return z.NEVER;
  });

/** `?estimator=&params=`: which advantages to show. */
export const creditSourceQuerySchema = z
  .object({
    estimator: z
      .enum(["stored", ...ESTIMATOR_IDS])
      .optional()
      .describe("Estimator id to recompute with (lib/credit registry); omitted or `stored` = the advantages stored with the turns."),
    params: paramsJson.optional().describe("The estimator's parameters as JSON; omitted = the training params for the training estimator, else the defaults."),
  })
  .strict();

export const creditOverviewQuerySchema = creditSourceQuerySchema
  .extend({
    maxSteps: queryInt(1, 1000).default(50).describe("Show at most this many training steps (evenly sampled)."),
    maxTurns: queryInt(1, 1000).default(200).describe("Turn-index columns."),
  })
  .strict();
