// Rollouts: training steps -> task groups -> trajectories -> turns.
import { z } from "zod";
import { batchIdSchema, idSchema, queryInt } from "./common";

const finite = z.number().refine(Number.isFinite, "must be a finite number");

/** The most tokens one turn may store (a long reasoning response; bounds a request's memory). */
export const MAX_TURN_TOKENS = 65_536;

export const turnInputSchema = z
  .object({
    observation: z.string().max(200_000),
    action: z.string().max(200_000),
    reward: finite,
    valid: z.boolean().default(true),
    done: z.boolean().default(false),
    anchor: z.string().max(10_000).nullable().optional(),
    agent: z.number().int().min(0).max(64).nullable().optional(),
    tokenCount: z.number().int().min(0).nullable().optional(),
    logprob: finite.nullable().optional(),
    entropy: finite.nullable().optional(),
    advantage: finite.nullable().optional(),
    info: z.record(z.string(), z.unknown()).nullable().optional(),
    // Per-token data of the response (stored packed, lib/db/token-data.ts): each array has one
    // entry per token id, in order.
    tokenIds: z.array(z.number().int().min(-(2 ** 31)).max(2 ** 31 - 1)).max(MAX_TURN_TOKENS).nullable().optional().describe("The response's token ids."),
    tokenTexts: z.array(z.string().max(1000)).max(MAX_TURN_TOKENS).nullable().optional().describe("Each token's text, for display (needs tokenIds)."),
    tokenLogprobs: z.array(finite).max(MAX_TURN_TOKENS).nullable().optional().describe("Sampling-time log-prob of each token under the policy (needs tokenIds)."),
    tokenAdvantages: z.array(finite).max(MAX_TURN_TOKENS).nullable().optional().describe("Per-token advantage (needs tokenIds)."),
    tokenEntropies: z.array(finite).max(MAX_TURN_TOKENS).nullable().optional().describe("Entropy of the policy at each token, nats (needs tokenIds)."),
  })
  .strict()
  .superRefine((t, ctx) => {
    const n = t.tokenIds?.length;
    for (const k of ["tokenTexts", "tokenLogprobs", "tokenAdvantages", "tokenEntropies"] as const) {
      const arr = t[k];
      if (!arr) continue;
      if (n === undefined) ctx.addIssue({ code: "custom", path: [k], message: `${k} needs tokenIds` });
      else if (arr.length !== n) ctx.addIssue({ code: "custom", path: [k], message: `${k} has ${arr.length} entries, tokenIds has ${n}: one per token` });
    }
  });
export type TurnInput = z.infer<typeof turnInputSchema>;

export const trajectoryInputSchema = z
  .object({
    reward: finite.optional().describe("Defaults to the sum of turn rewards."),
    success: z.boolean().default(false),
    truncated: z.boolean().default(false),
    turns: z.array(turnInputSchema).min(1).max(10_000),
  })
  .strict();
export type TrajectoryInput = z.infer<typeof trajectoryInputSchema>;

export const groupInputSchema = z
  .object({
    uid: z.string().min(1).max(200),
    envId: z.string().min(1).max(100),
    taskSeed: z.number().int().default(0),
    trajectories: z.array(trajectoryInputSchema).min(1).max(1024),
  })
  .strict();
export type GroupInput = z.infer<typeof groupInputSchema>;

/** POST /runs/:id/rollouts — one training step's batch (or an evaluation batch). */
export const rolloutStepInputSchema = z
  .object({
    step: z.number().int().min(0).max(2 ** 31 - 1),
    estimator: z.string().max(100).nullable().optional(),
    params: z.record(z.string(), z.unknown()).nullable().optional(),
    diagnostics: z.record(z.string(), z.unknown()).nullable().optional(),
    groups: z
      .array(groupInputSchema)
      .min(1)
      .max(10_000)
      .superRefine((groups, ctx) => {
        // one step's group uids are unique (GRPO's `uid`): a repeat is the client's bug, named here
        const seen = new Map<string, number>();
        groups.forEach((g, i) => {
          const first = seen.get(g.uid);
          if (first !== undefined) ctx.addIssue({ code: "custom", path: [i, "uid"], message: `duplicate group uid "${g.uid}" (also groups[${first}].uid)` });
          else seen.set(g.uid, i);
        });
      }),
    batchId: batchIdSchema.optional(),
  })
  .strict()
  .meta({ id: "StepBatch" });
export type RolloutStepInput = z.infer<typeof rolloutStepInputSchema>;

export const pageQuerySchema = z
  .object({
    after: queryInt(-1, 2 ** 31 - 1).default(-1).describe("Cursor: return items after this one."),
    limit: queryInt(1, 1000).default(100),
  })
  .strict();

export const trajectoryListQuerySchema = z
  .object({
    step: queryInt(0, 2 ** 31 - 1).optional(),
    groupId: idSchema.optional(),
    success: z.enum(["true", "false"]).optional(),
    page: queryInt(1, 1_000_000).default(1),
    pageSize: queryInt(1, 200).default(50),
  })
  .strict();

/** A turn's stored per-token data (float32 precision), as the API answers it. */
export const tokenDataSchema = z
  .object({
    ids: z.array(z.number()),
    texts: z.array(z.string()).nullable(),
    logprobs: z.array(z.number()).nullable(),
    advantages: z.array(z.number()).nullable(),
    entropies: z.array(z.number()).nullable(),
  })
  .meta({ id: "TurnTokens" });
export type TokenData = z.infer<typeof tokenDataSchema>;

export const turnSchema = z
  .object({
    seq: z.number(),
    trajectoryId: z.string(),
    index: z.number(),
    observation: z.string(),
    action: z.string(),
    reward: z.number(),
    valid: z.boolean(),
    done: z.boolean(),
    anchor: z.string().nullable(),
    agent: z.number().nullable(),
    tokenCount: z.number().nullable(),
    logprob: z.number().nullable(),
    entropy: z.number().nullable(),
    advantage: z.number().nullable(),
    info: z.unknown().nullable(),
    tokens: tokenDataSchema.nullable().describe("Per-token data of the response; null when the run stored none."),
  })
  .meta({ id: "Turn" });
export type TurnOut = z.infer<typeof turnSchema>;

export const trajectorySchema = z
  .object({
    id: z.string(),
    groupId: z.string(),
    uid: z.string(),
    step: z.number(),
    index: z.number(),
    reward: z.number(),
    success: z.boolean(),
    length: z.number(),
    truncated: z.boolean(),
    turns: z.array(turnSchema).optional(),
  })
  .meta({ id: "Trajectory" });
export type TrajectoryOut = z.infer<typeof trajectorySchema>;

/** One trajectory as GET /trajectories/{id} answers it: with its run and every turn. */
export const trajectoryDetailSchema = trajectorySchema
  .extend({ runId: z.string().describe("The run it belongs to."), turns: z.array(turnSchema) })
  .meta({ id: "TrajectoryDetail" });

export const rolloutStepSchema = z
  .object({
    id: z.string(),
    step: z.number(),
    estimator: z.string().nullable(),
    groups: z.number(),
    trajectories: z.number(),
    successRate: z.number().nullable(),
    meanReward: z.number().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: "RolloutStep" });
export type RolloutStepOut = z.infer<typeof rolloutStepSchema>;

export const groupSchema = z
  .object({
    id: z.string(),
    uid: z.string(),
    envId: z.string(),
    taskSeed: z.number(),
    step: z.number(),
    trajectories: z.number(),
    successRate: z.number(),
    meanReward: z.number(),
  })
  .meta({ id: "RolloutGroup" });
export type GroupOut = z.infer<typeof groupSchema>;
