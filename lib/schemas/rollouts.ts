// Rollouts: training steps -> task groups -> trajectories -> turns.
import { z } from "zod";
import { batchIdSchema, idSchema, queryInt } from "./common";

const finite = z.number().refine(Number.isFinite, "must be a finite number");

/** The most tokens one turn may store (a long reasoning response; bounds a request's memory). */
export const MAX_TURN_TOKENS = 65_536;

/**
 * Per-token numbers packed as base64 of little-endian int32 or float32 values: what the Python
 * client sends (from numpy, torch or array('f') in C), about 4x fewer bytes than JSON numbers and
 * no number parsing on either side. Stored exactly as the JSON numbers would be (float32).
 */
export interface PackedValues {
  dtype: "int32" | "float32";
  data: string;
}
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Bytes of one packed value of each dtype. */
const PACKED_WIDTH: Record<PackedValues["dtype"], number> = { int32: 4, float32: 4 };
/** The base64 text of `n` values of `width` bytes: 4 characters per 3 bytes, padded to a multiple of 4. */
const base64Chars = (n: number, width: number) => 4 * Math.ceil((n * width) / 3);
/** The longest base64 text of MAX_TURN_TOKENS values of a dtype (int32: 349,528 characters). */
const maxPackedChars = (dtype: PackedValues["dtype"]) => base64Chars(MAX_TURN_TOKENS, PACKED_WIDTH[dtype]);
const packedSchema = (dtype: PackedValues["dtype"]) =>
  z
    .object({
      dtype: z.literal(dtype),
      data: z
        .string()
        .max(maxPackedChars(dtype), `at most ${MAX_TURN_TOKENS} values (${maxPackedChars(dtype)} base64 characters)`)
        .regex(BASE64, "must be base64"),
    })
    .strict()
    .superRefine((p, ctx) => {
      const bad = packedProblem(p);
      if (bad) ctx.addIssue({ code: "custom", path: ["data"], message: bad });
    })
    .describe(`${dtype === "int32" ? "int32" : "float32"} values, little-endian, base64-encoded`);

/** A packed array's bytes (atob: the same code in the server and the browser). */
function packedBytes(data: string): Uint8Array {
  const bin = atob(data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

/** The values of packed bytes, in order. */
function valuesOf(bytes: Uint8Array, dtype: PackedValues["dtype"]): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.length >> 2;
  const out = new Array<number>(n);
  if (dtype === "int32") for (let i = 0; i < n; i++) out[i] = view.getInt32(4 * i, true);
  else for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
  return out;
}

export function unpackValues(p: PackedValues): number[] {
  return valuesOf(packedBytes(p.data), p.dtype);
}

/** What is wrong with a packed array (not base64, a partial value, too many values, a non-finite float), or null. */
function packedProblem(p: PackedValues): string | null {
  if (!BASE64.test(p.data) || p.data.length % 4 !== 0) return "is not base64 (padded to a multiple of 4 characters)";
  const bytes = packedBytes(p.data);
  const w = PACKED_WIDTH[p.dtype];
  if (bytes.length % w !== 0) return `holds ${bytes.length} bytes, not a whole number of ${w}-byte values`;
  if (bytes.length / w > MAX_TURN_TOKENS) return `holds ${bytes.length / w} values, at most ${MAX_TURN_TOKENS}`;
  if (p.dtype === "float32") {
    const values = valuesOf(bytes, "float32");
    for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) return `value ${i} is ${values[i]}, not a finite number`;
  }
  return null;
}

/** A token field's values, unpacked when packed (what storage and summaries read). */
export function tokenValues(x: number[] | PackedValues | null | undefined): number[] | null {
  return x == null ? null : Array.isArray(x) ? x : unpackValues(x);
}

/** How many values a token field holds, without unpacking a packed one. */
function tokenCount(x: unknown[] | PackedValues): number {
  if (Array.isArray(x)) return x.length;
  const pad = x.data.endsWith("==") ? 2 : x.data.endsWith("=") ? 1 : 0;
  return Math.floor(((x.data.length / 4) * 3 - pad) / 4);
}

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
    tokenIds: z
      .union([
        z
          .array(
            z
              .number()
              .int()
              .min(-(2 ** 31))
              .max(2 ** 31 - 1),
          )
          .max(MAX_TURN_TOKENS),
        packedSchema("int32"),
      ])
      .nullable()
      .optional()
      .describe("The response's token ids (an array, or packed int32)."),
    tokenTexts: z.array(z.string().max(1000)).max(MAX_TURN_TOKENS).nullable().optional().describe("Each token's text, for display (needs tokenIds)."),
    tokenLogprobs: z
      .union([z.array(finite).max(MAX_TURN_TOKENS), packedSchema("float32")])
      .nullable()
      .optional()
      .describe("Sampling-time log-prob of each token under the policy (needs tokenIds; an array, or packed float32)."),
    tokenAdvantages: z
      .union([z.array(finite).max(MAX_TURN_TOKENS), packedSchema("float32")])
      .nullable()
      .optional()
      .describe("Per-token advantage (needs tokenIds; an array, or packed float32)."),
    tokenEntropies: z
      .union([z.array(finite).max(MAX_TURN_TOKENS), packedSchema("float32")])
      .nullable()
      .optional()
      .describe("Entropy of the policy at each token, nats (needs tokenIds; an array, or packed float32)."),
  })
  .strict()
  .superRefine((t, ctx) => {
    const n = t.tokenIds ? tokenCount(t.tokenIds) : undefined;
    for (const k of ["tokenTexts", "tokenLogprobs", "tokenAdvantages", "tokenEntropies"] as const) {
      const arr = t[k];
      if (!arr) continue;
      const len = tokenCount(arr);
      if (n === undefined) ctx.addIssue({ code: "custom", path: [k], message: `${k} needs tokenIds` });
      else if (len !== n) ctx.addIssue({ code: "custom", path: [k], message: `${k} has ${len} entries, tokenIds has ${n}: one per token` });
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
    step: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
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

/** Most parts one step may be sent in (each up to the body limit: 64 MB x 1024 is far past any step). */
export const MAX_STEP_PARTS = 1024;

/**
 * POST /runs/:id/steps/parts: one part of a step too large for one request, split by groups. Each
 * part carries the step's estimator, params and diagnostics (the same in every part) and some of its
 * groups; the step is stored, whole and at once, when its last part arrives.
 */
export const rolloutStepPartSchema = rolloutStepInputSchema
  .extend({
    part: z
      .number()
      .int()
      .min(0)
      .max(MAX_STEP_PARTS - 1)
      .describe("This part's index, 0-based."),
    parts: z.number().int().min(1).max(MAX_STEP_PARTS).describe("How many parts the step was split into."),
  })
  .strict()
  .refine((b) => b.part < b.parts, { path: ["part"], message: "must be less than parts" })
  .meta({ id: "StepPart" });
export type RolloutStepPart = z.infer<typeof rolloutStepPartSchema>;

/** rolloutStepPartSchema's output for `v`, or null (then the schema names the field): the step's fast check plus the two indices. */
export function rolloutStepPartFast(v: unknown): RolloutStepPart | null {
  if (!isRecord(v)) return null;
  const { part, parts, ...rest } = v as Record<string, unknown>;
  if (!isInt(parts, 1, MAX_STEP_PARTS) || !isInt(part, 0, (parts as number) - 1)) return null;
  const step = rolloutStepFast(rest);
  return step && { ...step, part: part as number, parts: parts as number };
}

/** Most steps in one POST /runs/:id/steps/batch (each up to the step limits; the body limit still applies). */
export const MAX_BATCH_STEPS = 64;

/** Index of the first step of a batch not after the one before it (out of order or repeated), or -1. */
const outOfOrder = (steps: { step: number }[]) => steps.findIndex((s, i) => i > 0 && !(s.step > steps[i - 1].step));

/** POST /runs/:id/steps/batch: steps in increasing order, each once, stored in order in one transaction. */
export const rolloutStepsBatchSchema = z
  .object({
    steps: z
      .array(rolloutStepInputSchema)
      .min(1)
      .max(MAX_BATCH_STEPS)
      .superRefine((steps, ctx) => {
        const i = outOfOrder(steps);
        if (i >= 0)
          ctx.addIssue({
            code: "custom",
            path: [i, "step"],
            message: `step ${steps[i].step} comes after step ${steps[i - 1].step}: a batch's steps go in increasing order, each once`,
          });
      })
      .describe("In increasing step order, each step once."),
  })
  .strict()
  .meta({ id: "StepsBatch" });
export type RolloutStepsBatch = z.infer<typeof rolloutStepsBatchSchema>;

const INT32 = 2 ** 31;
const isFiniteNum = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isInt = (x: unknown, min: number, max: number) => Number.isSafeInteger(x) && (x as number) >= min && (x as number) <= max;
const isStr = (x: unknown, min: number, max: number): x is string => typeof x === "string" && x.length >= min && x.length <= max;
const isRecord = (x: unknown) => x !== null && typeof x === "object" && !Array.isArray(x);
const onlyKeys = (o: object, allowed: Set<string>) => {
  for (const k in o) if (!allowed.has(k)) return false;
  return true;
};
const STEP_KEYS = new Set(["step", "estimator", "params", "diagnostics", "groups", "batchId"]);
const GROUP_KEYS = new Set(["uid", "envId", "taskSeed", "trajectories"]);
const TRAJ_KEYS = new Set(["reward", "success", "truncated", "turns"]);
const BATCH_KEYS = new Set(["steps"]);
const TURN_KEYS = new Set(Object.keys(turnInputSchema.shape));
const PACKED_KEYS = new Set(["dtype", "data"]);
/** Optional per-turn scalars in schema order, with their check (null allowed for each). */
const TURN_OPTIONAL: [string, (x: unknown) => boolean][] = [
  ["anchor", (x) => isStr(x, 0, 10_000)],
  ["agent", (x) => isInt(x, 0, 64)],
  ["tokenCount", (x) => isInt(x, 0, Number.MAX_SAFE_INTEGER)],
  ["logprob", isFiniteNum],
  ["entropy", isFiniteNum],
  ["advantage", isFiniteNum],
  ["info", isRecord],
];
const TOKEN_ARRAYS: [string, (x: unknown) => boolean][] = [
  ["tokenIds", (x) => isInt(x, -INT32, INT32 - 1)],
  ["tokenTexts", (x) => isStr(x, 0, 1000)],
  ["tokenLogprobs", isFiniteNum],
  ["tokenAdvantages", isFiniteNum],
  ["tokenEntropies", isFiniteNum],
];

function fastTurn(v: unknown): TurnInput | null {
  if (!isRecord(v)) return null;
  const u = v as Record<string, unknown>;
  if (!onlyKeys(u, TURN_KEYS)) return null;
  const { observation, action, reward, valid, done } = u;
  if (!isStr(observation, 0, 200_000) || !isStr(action, 0, 200_000) || !isFiniteNum(reward)) return null;
  if ((valid !== undefined && typeof valid !== "boolean") || (done !== undefined && typeof done !== "boolean")) return null;
  // keys in the schema's order, defaults filled: the same object (and content hash) zod gives
  const out: Record<string, unknown> = { observation, action, reward, valid: valid ?? true, done: done ?? false };
  for (const [k, ok] of TURN_OPTIONAL) {
    if (!(k in u)) continue;
    const x = u[k];
    if (x !== null && !ok(x)) return null;
    out[k] = x;
  }
  let n = -1;
  for (const [k, ok] of TOKEN_ARRAYS) {
    if (!(k in u)) continue;
    let x = u[k];
    if (x !== null) {
      let len: number;
      if (Array.isArray(x)) {
        if (x.length > MAX_TURN_TOKENS) return null;
        for (let i = 0; i < x.length; i++) if (!ok(x[i])) return null;
        len = x.length;
      } else {
        // packed values: the schema's own check, and a fresh object as zod's output is
        const dtype = k === "tokenIds" ? "int32" : k === "tokenTexts" ? null : "float32";
        if (!dtype || !isRecord(x) || !onlyKeys(x as object, PACKED_KEYS)) return null;
        const p = x as Record<string, unknown>;
        if (p.dtype !== dtype || !isStr(p.data, 0, maxPackedChars(dtype)) || packedProblem(p as unknown as PackedValues)) return null;
        x = { dtype, data: p.data };
        len = tokenCount(x as PackedValues);
      }
      if (k === "tokenIds") n = len;
      else if (len !== n) return null; // needs tokenIds, one entry per token
    }
    out[k] = x;
  }
  return out as TurnInput;
}

/**
 * The body rolloutStepInputSchema would give for `v`, or null: then the schema decides and names
 * the field (test/platform/rollout-fast-check.test.ts checks the two agree, output included). Plain
 * loops, no issue bookkeeping: several times cheaper than the schema on a 1,024-turn step.
 */
export function rolloutStepFast(v: unknown): RolloutStepInput | null {
  if (!isRecord(v)) return null;
  const b = v as Record<string, unknown>;
  if (!onlyKeys(b, STEP_KEYS) || !isInt(b.step, 0, INT32 - 1)) return null;
  if (b.estimator !== undefined && b.estimator !== null && !isStr(b.estimator, 0, 100)) return null;
  for (const k of ["params", "diagnostics"] as const) if (b[k] !== undefined && b[k] !== null && !isRecord(b[k])) return null;
  if (b.batchId !== undefined && !batchIdSchema.safeParse(b.batchId).success) return null;
  const groups = b.groups;
  if (!Array.isArray(groups) || groups.length < 1 || groups.length > 10_000) return null;
  const uids = new Set<string>();
  const outGroups: GroupInput[] = [];
  for (const g of groups) {
    if (!isRecord(g) || !onlyKeys(g, GROUP_KEYS)) return null;
    const { uid, envId, taskSeed, trajectories } = g as Record<string, unknown>;
    if (!isStr(uid, 1, 200) || !isStr(envId, 1, 100) || uids.has(uid)) return null;
    uids.add(uid);
    if (taskSeed !== undefined && !Number.isSafeInteger(taskSeed)) return null;
    if (!Array.isArray(trajectories) || trajectories.length < 1 || trajectories.length > 1024) return null;
    const outTrajs: TrajectoryInput[] = [];
    for (const t of trajectories) {
      if (!isRecord(t) || !onlyKeys(t, TRAJ_KEYS)) return null;
      const { reward, success, truncated, turns } = t as Record<string, unknown>;
      if (reward !== undefined && !isFiniteNum(reward)) return null;
      if ((success !== undefined && typeof success !== "boolean") || (truncated !== undefined && typeof truncated !== "boolean")) return null;
      if (!Array.isArray(turns) || turns.length < 1 || turns.length > 10_000) return null;
      const outTurns: TurnInput[] = new Array(turns.length);
      for (let i = 0; i < turns.length; i++) {
        const u = fastTurn(turns[i]);
        if (!u) return null;
        outTurns[i] = u;
      }
      const ot: Record<string, unknown> = {};
      if (reward !== undefined) ot.reward = reward;
      ot.success = success ?? false;
      ot.truncated = truncated ?? false;
      ot.turns = outTurns;
      outTrajs.push(ot as TrajectoryInput);
    }
    outGroups.push({ uid, envId, taskSeed: (taskSeed as number | undefined) ?? 0, trajectories: outTrajs });
  }
  const out: Record<string, unknown> = { step: b.step };
  for (const k of ["estimator", "params", "diagnostics"] as const) if (k in b) out[k] = b[k];
  out.groups = outGroups;
  if ("batchId" in b) out.batchId = b.batchId;
  return out as RolloutStepInput;
}

/** rolloutStepsBatchSchema's output for `v`, or null (then the schema names the field): rolloutStepFast per step. */
export function rolloutStepsBatchFast(v: unknown): RolloutStepsBatch | null {
  if (!isRecord(v) || !onlyKeys(v as Record<string, unknown>, BATCH_KEYS)) return null;
  const steps = (v as Record<string, unknown>).steps;
  if (!Array.isArray(steps) || steps.length < 1 || steps.length > MAX_BATCH_STEPS) return null;
  const out: RolloutStepInput[] = new Array(steps.length);
  for (let i = 0; i < steps.length; i++) {
    const s = rolloutStepFast(steps[i]);
    if (!s) return null;
    out[i] = s;
  }
  return outOfOrder(out) < 0 ? { steps: out } : null;
}

export const pageQuerySchema = z
  .object({
    after: queryInt(-1, 2 ** 31 - 1)
      .default(-1)
      .describe("Cursor: return items after this one."),
    limit: queryInt(1, 1000).default(100),
  })
  .strict();

export const trajectoryListQuerySchema = z
  .object({
    step: queryInt(0, 2 ** 31 - 1).optional(),
    groupId: idSchema.optional(),
    success: z.enum(["true", "false"]).optional(),
    label: z.string().min(1).max(40).optional().describe("Only trajectories carrying this label (by name), on themselves or a turn."),
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
