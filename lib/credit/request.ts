// The credit request: one zod schema shared by the CLI, the HTTP API and the worker, plus the
// one-line error every bad request produces (the API maps CreditRequestError to a 400).
import { z } from "zod";
import { canonicalAnchorKey } from "./anchor-key";
import { CreditRequestError } from "./errors";
import { ESTIMATOR_IDS, getEstimator, isEstimatorId } from "./registry";
import { rewardTransformSchema } from "./reward-transform";
import type { EstimatorSpec, TurnContext } from "./spec";
import type { AnchorValue, Turn } from "./types";

export { CreditRequestError };

/** Marker the CLI's tolerant JSON reader puts where the text had a bare NaN / Infinity token. */
export const NON_FINITE_MARKER = "$nonFinite";

/** How a bad value is named in an error message. */
export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (typeof v === "number") return Number.isNaN(v) ? "NaN" : String(v);
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "..." : v)}`;
  if (typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object" && v !== null && NON_FINITE_MARKER in v) return String((v as Record<string, unknown>)[NON_FINITE_MARKER]);
  return "an object";
}

const finite = (what = "a finite number") =>
  z.number({ error: (iss) => `expected ${what}, got ${describeValue(iss.input)}` });
const finiteOpt = () => finite().optional();

/** A JSON value (anchor). Non-finite numbers cannot come from JSON; checked at canonicalisation. */
const anchorSchema: z.ZodType<AnchorValue> = z.lazy(() =>
  z.union([z.string(), finite(), z.boolean(), z.null(), z.array(anchorSchema), z.record(z.string(), anchorSchema)]),
);

export const turnSchema = z
  .object({
    reward: finite(),
    anchor: anchorSchema.optional(),
    invalid: z.boolean().optional(),
    agent: z.union([z.string(), finite()]).optional(),
    value: finiteOpt(),
    q1: finiteOpt(),
    q2: finiteOpt(),
    v2: finiteOpt(),
    infoGain: finiteOpt(),
    judgeScore: z.union([finite("a finite number or null (failed judgement)"), z.null()]).optional(),
    segment: finiteOpt(),
    tokens: z
      .number({ error: (iss) => `expected a non-negative integer, got ${describeValue(iss.input)}` })
      .int({ error: (iss) => `expected a non-negative integer, got ${describeValue(iss.input)}` })
      .min(0, { error: (iss) => `expected a non-negative integer, got ${describeValue(iss.input)}` })
      .optional(),
    toolResult: z.boolean().optional(),
    highValue: finiteOpt(),
  })
  .strict();

export const trajectorySchema = z
  .object({
    id: z.string().min(1),
    turns: z.array(turnSchema).min(1, { error: "a trajectory needs at least one turn" }),
    truncated: z.boolean().optional(),
    envTag: z.string().optional(),
  })
  .strict();

export const groupSchema = z
  .object({
    uid: z.string().min(1),
    trajectories: z.array(trajectorySchema).min(1, { error: "a group needs at least one trajectory" }),
  })
  .strict();

export const creditRequestSchema = z
  .object({
    estimator: z.enum(ESTIMATOR_IDS),
    params: z.record(z.string(), z.unknown()).optional(),
    rewardTransform: rewardTransformSchema.optional(),
    groups: z.array(groupSchema).min(1, { error: "the request needs at least one group" }),
  })
  .strict();

export type CreditRequest = z.output<typeof creditRequestSchema>;

export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += (out ? "." : "") + String(p);
  }
  return out;
}

function formatIssue(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[] = []): CreditRequestError {
  const path = [...prefix, ...issue.path];
  let msg = issue.message;
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case "invalid_type":
      if (input === undefined) msg = `missing (expected ${issue.expected})`;
      else if (!msg.startsWith("expected")) msg = `expected ${issue.expected}, got ${describeValue(input)}`;
      break;
    case "unrecognized_keys": {
      const keys = issue.keys.map((k) => JSON.stringify(k)).join(", ");
      msg = `unknown field${issue.keys.length > 1 ? "s" : ""} ${keys}`;
      break;
    }
    case "invalid_value":
      msg = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, got ${describeValue(input)}`;
      break;
    case "invalid_union":
      msg = `expected ${path.includes("anchor") ? "a JSON value" : "a valid value"}, got ${describeValue(input)}`;
      break;
    default:
      break;
  }
  const p = formatPath(path);
  return new CreditRequestError(p ? `${p}: ${msg}` : msg, p);
}

/** Validate `params` against an estimator's schema (defaults applied). */
export function parseParams(spec: EstimatorSpec, params: unknown): Record<string, unknown> {
  const r = spec.paramsSchema.safeParse(params ?? {}, { reportInput: true });
  if (r.success) return r.data as Record<string, unknown>;
  const issue = r.error.issues[0];
  if (issue.code === "unrecognized_keys") {
    const known = Object.keys(spec.paramsSchema.shape);
    const p = formatPath(["params", ...issue.path, issue.keys[0]]);
    return fail(
      `${p}: unknown parameter for estimator "${spec.id}"; known: ${known.length ? known.join(", ") : "(none)"}`,
      p,
    );
  }
  throw formatIssue(issue, ["params"]);
}

function fail(message: string, path = ""): never {
  throw new CreditRequestError(message, path);
}

/**
 * Validate a request: shape, estimator id, params, unique ids, and the turn fields the estimator
 * needs. Returns the parsed request and the estimator's parsed params.
 */
export function validateRequest(request: unknown): {
  request: CreditRequest;
  spec: EstimatorSpec;
  params: Record<string, unknown>;
} {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    fail(`request: expected a JSON object, got ${describeValue(request)}`);
  }
  const est = (request as Record<string, unknown>).estimator;
  if (est === undefined) fail(`estimator: missing; known: ${ESTIMATOR_IDS.join(", ")}`, "estimator");
  if (typeof est !== "string") fail(`estimator: expected a string, got ${describeValue(est)}`, "estimator");
  if (!isEstimatorId(est)) fail(`estimator: unknown estimator "${est}"; known: ${ESTIMATOR_IDS.join(", ")}`, "estimator");
  const spec = getEstimator(est);

  const r = creditRequestSchema.safeParse(request, { reportInput: true });
  if (!r.success) throw formatIssue(r.error.issues[0]);
  const req = r.data;
  const params = parseParams(spec, req.params);

  const uids = new Map<string, number>();
  const ids = new Map<string, string>();
  req.groups.forEach((g, gi) => {
    const prev = uids.get(g.uid);
    if (prev !== undefined) fail(`groups[${gi}].uid: duplicate group uid "${g.uid}" (first at groups[${prev}])`, `groups[${gi}].uid`);
    uids.set(g.uid, gi);
    g.trajectories.forEach((t, ti) => {
      const here = `groups[${gi}].trajectories[${ti}]`;
      const first = ids.get(t.id);
      if (first !== undefined) fail(`${here}.id: duplicate trajectory id "${t.id}" (first at ${first})`, `${here}.id`);
      ids.set(t.id, here);
      checkNeeds(spec, t.turns, here);
    });
  });
  return { request: req, spec, params };
}

function checkNeeds(spec: EstimatorSpec, turns: Turn[], here: string): void {
  const needs = spec.needs;
  const n = turns.length;
  for (let i = 0; i < n; i++) {
    const turn = turns[i];
    let ctx: TurnContext | undefined;
    for (const f of needs) {
      if (turn[f] !== undefined) continue;
      const when = spec.neededOn?.[f];
      if (when) {
        ctx ??= {
          turnIndex: i,
          length: n,
          last: i === n - 1,
          segmentStart: i === 0 || turns[i - 1].segment !== turn.segment,
        };
        if (!when(ctx)) continue;
      }
      const p = `${here}.turns[${i}].${f}`;
      fail(`${p}: missing; estimator "${spec.id}" needs ${f}${when ? "" : " on every turn"}`, p);
    }
    if (turn.anchor !== undefined && typeof turn.anchor !== "string") {
      const p = `${here}.turns[${i}].anchor`;
      const bad = findNonFinite(turn.anchor);
      if (bad !== null) fail(`${p}: anchor contains a non-finite number: ${bad}`, p);
      try {
        canonicalAnchorKey(turn.anchor);
      } catch (e) {
        fail(`${p}: ${(e as Error).message}`, p);
      }
    }
  }
}

/** The first non-finite marker inside an anchor value, or null. */
function findNonFinite(v: unknown): string | null {
  if (v === null || typeof v !== "object") return null;
  if (!Array.isArray(v) && NON_FINITE_MARKER in v) return String((v as Record<string, unknown>)[NON_FINITE_MARKER]);
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    const r = findNonFinite(x);
    if (r !== null) return r;
  }
  return null;
}

/**
 * Parse request text. Bare NaN / Infinity / -Infinity tokens (which Python's json.dumps emits)
 * are not JSON; instead of a parse error they become a marker so validation can name the field.
 */
export function parseRequestText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (first) {
    const patched = replaceNonFiniteTokens(text);
    if (patched !== text) {
      try {
        return JSON.parse(patched);
      } catch {
        /* fall through to the original error */
      }
    }
    throw new CreditRequestError(`request: not valid JSON (${(first as Error).message})`);
  }
}

function replaceNonFiniteTokens(text: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === "\\") {
        out += text[i + 1] ?? "";
        i++;
      } else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
      continue;
    }
    const tok = ["-Infinity", "Infinity", "NaN"].find((t) => text.startsWith(t, i));
    if (tok) {
      out += `{"${NON_FINITE_MARKER}":"${tok}"}`;
      i += tok.length - 1;
    } else out += c;
  }
  return out;
}
