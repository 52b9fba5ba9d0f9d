// Trajectory search: the query (what the URL of the search page and GET /trajectories/search carry)
// and the answer. lib/db/trajectory-search.ts runs it.
import { z } from "zod";
import { documentedAs, queryInt } from "./common";

/** A query-string number: plain decimal (1, -0.5, 2e-3), finite. */
const queryNumber = () => {
  const s = z
    .string()
    .regex(/^-?(\d{1,20}(\.\d{0,20})?|\.\d{1,20})([eE][-+]?\d{1,3})?$/, "must be a decimal number")
    .transform(Number)
    .pipe(z.number().finite());
  documentedAs.set(s, { type: "number" });
  return s;
};

export const SEARCH_SORTS = ["step", "return", "length"] as const;

/**
 * A page's position: the last hit's sort value (as JavaScript prints a number) and its key. Every
 * string of this form is a position in the order (out-of-range values stand for the ends), so a
 * cursor is never refused once it has this form.
 */
export const SEARCH_CURSOR = /^(-?\d{1,20}(?:\.\d{1,20})?(?:e[-+]?\d{1,3})?)_(\d{1,15})$/;
export const TEXT_FIELDS = ["any", "observation", "action"] as const;

export const trajectorySearchQuerySchema = z
  .object({
    runs: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}(,[A-Za-z0-9_-]{1,64}){0,49}$/, "must be 1 to 50 comma-separated run ids")
      .transform((s) => s.split(","))
      .optional()
      .describe("Comma-separated run ids to search (with `project`: those of them in the project). Neither: every run."),
    project: z.string().min(1).max(100).optional().describe("Search every run of this project (by name)."),
    text: z
      .string()
      .max(500)
      .optional()
      .describe(
        'Words and "quoted phrases", all required; case-insensitive, matched on whole words (runs of letters and digits, at most 64 long: longer ones are not indexed and match nothing). A phrase matches within one turn.',
      ),
    in: z.enum(TEXT_FIELDS).default("any").describe("Where the text is looked for: a turn's observation, its action, or either."),
    outcome: z.enum(["success", "failure"]).optional(),
    minLength: queryInt(0, 1_000_000).optional().describe("Turns, at least."),
    maxLength: queryInt(0, 1_000_000).optional(),
    minReturn: queryNumber().optional().describe("The trajectory's return, at least."),
    maxReturn: queryNumber().optional(),
    step: queryInt(0, 2 ** 31 - 1)
      .optional()
      .describe("Only this training step."),
    minStep: queryInt(0, 2 ** 31 - 1).optional(),
    maxStep: queryInt(0, 2 ** 31 - 1).optional(),
    envId: z.string().min(1).max(100).optional().describe("The task group's environment."),
    task: z.string().min(1).max(200).optional().describe("The task group's uid."),
    label: z.string().min(1).max(40).optional().describe("Only trajectories carrying this label (by name), on themselves or a turn."),
    // Per-turn conditions: a trajectory matches when one of its turns meets all that are given.
    minTurn: queryInt(0, 1_000_000).optional().describe("Per-turn: turn index at least (0-based)."),
    maxTurn: queryInt(0, 1_000_000).optional().describe("Per-turn: turn index at most."),
    advantage: z.enum(["positive", "negative", "zero"]).optional().describe("Per-turn: sign of the stored advantage."),
    minAdvantage: queryNumber().optional().describe("Per-turn: stored advantage at least."),
    maxAdvantage: queryNumber().optional(),
    minReward: queryNumber().optional().describe("Per-turn: the turn's reward at least."),
    maxReward: queryNumber().optional(),
    valid: z.enum(["true", "false"]).optional().describe("Per-turn: the action was valid (or not)."),
    anchor: z.string().min(1).max(10_000).optional().describe("Per-turn: the turn's anchor state, exactly as stored."),
    sort: z.enum(SEARCH_SORTS).default("step"),
    order: z.enum(["asc", "desc"]).default("desc"),
    cursor: z
      .string()
      .regex(SEARCH_CURSOR, "must be the `next` of a previous page: SORTVALUE_KEY")
      .optional()
      .describe("The `next` of the previous page: the last hit's sort value and key (`SORTVALUE_KEY`); the page starts after it."),
    pageSize: queryInt(1, 200).default(50),
  })
  .strict();
export type TrajectorySearchQuery = z.output<typeof trajectorySearchQuerySchema>;

export const trajectoryHitSchema = z
  .object({
    id: z.string(),
    runId: z.string(),
    runName: z.string(),
    step: z.number(),
    groupId: z.string(),
    task: z.string().describe("The task group's uid."),
    envId: z.string(),
    index: z.number().describe("Position within its group."),
    reward: z.number(),
    success: z.boolean(),
    length: z.number(),
    matchedTurns: z.array(z.number()).describe("Indices of the turns that met the per-turn conditions, else of those holding the text (at most 100)."),
  })
  .meta({ id: "TrajectoryHit" });
export type TrajectoryHit = z.infer<typeof trajectoryHitSchema>;

export const trajectorySearchResultSchema = z
  .object({
    trajectories: z.array(trajectoryHitSchema),
    next: z.string().nullable().describe("Cursor of the next page; null when the search is exhausted."),
    partial: z
      .boolean()
      .describe(
        "The page stopped before it was full, with more left to check (its time or candidate budget spent): ask `next` for the rest. Its hits are the first of the page, in order.",
      ),
    scanned: z.number().describe("Trajectories this page examined (index hits checked against the per-turn conditions and phrases)."),
  })
  .meta({ id: "TrajectorySearchResult" });
export type TrajectorySearchResult = z.infer<typeof trajectorySearchResultSchema>;
