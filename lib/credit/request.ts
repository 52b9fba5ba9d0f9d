// The credit request: one zod schema shared by the CLI, the HTTP API and the worker, plus the
// one-line error every bad request produces (the API maps CreditRequestError to a 400).
import { z } from "zod";
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

const finite = (what = "a finite number") => z.number({ error: (iss) => `expected ${what}, got ${describeValue(iss.input)}` });
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
    output: z.enum(["full", "advantages"]).optional().describe('"advantages": trajectories carry only id and advantages (no components); default "full".'),
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
    return fail(`${p}: unknown parameter for estimator "${spec.id}"; known: ${known.length ? known.join(", ") : "(none)"}`, p);
  }
  throw formatIssue(issue, ["params"]);
}

function fail(message: string, path = ""): never {
  throw new CreditRequestError(message, path);
}

/** Largest magnitude of a number in a request: squares of sums of 10^7 such values stay finite. */
export const MAX_ABS_NUMBER = 1e100;
/** Deepest nesting of arrays / objects inside one JSON value of a request (an anchor, a parameter). */
export const MAX_VALUE_DEPTH = 64;

/** Top-level request fields other than `groups`, parsed with zod (they are small). */
const headSchema = creditRequestSchema.omit({ groups: true });

/**
 * Validate a request: shape, estimator id, params, unique ids, number bounds, value nesting, and
 * the turn fields the estimator needs. Returns the request (its own objects, not a copy) and the
 * estimator's parsed params. `groups` is checked by a hand-written walk (zod over 10^6 turn
 * objects costs more than the estimator); it accepts exactly what `creditRequestSchema` accepts
 * plus the bounds, and names the first bad field like the zod path does.
 */
export function validateRequest(request: unknown): {
  request: CreditRequest;
  spec: EstimatorSpec;
  params: Record<string, unknown>;
} {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    fail(`request: expected a JSON object, got ${describeValue(request)}`);
  }
  const obj = request as Record<string, unknown>;
  const { groups } = obj;
  const { spec, head, params } = validateHead(obj, (spec) => {
    if (groups === undefined) fail("groups: missing (expected array)", "groups");
    checkGroups(groups, spec);
  });
  return { request: { ...head, groups } as CreditRequest, spec, params };
}

/**
 * The request's fields other than `groups` (estimator, params, output, rewardTransform), then
 * `checkGroups` (the caller's check of the turns), then the estimator's params. `validateRequest`
 * and the CLI's fast path (lib/credit/fast-request.ts) share it.
 */
export function validateHead(
  obj: Record<string, unknown>,
  checkGroups: (spec: EstimatorSpec) => void,
): { spec: EstimatorSpec; head: Omit<CreditRequest, "groups">; params: Record<string, unknown> } {
  const est = obj.estimator;
  if (est === undefined) fail(`estimator: missing; known: ${ESTIMATOR_IDS.join(", ")}`, "estimator");
  if (typeof est !== "string") fail(`estimator: expected a string, got ${describeValue(est)}`, "estimator");
  if (!isEstimatorId(est)) fail(`estimator: unknown estimator "${est}"; known: ${ESTIMATOR_IDS.join(", ")}`, "estimator");
  const spec = getEstimator(est);

  const { groups: _groups, ...head } = obj;
  if (head.params !== undefined) {
    checkValue(head.params, "params", false);
    if (typeof head.params === "object" && head.params !== null) {
      for (const [k, v] of Object.entries(head.params)) {
        if (typeof v === "number" && Number.isFinite(v) && Math.abs(v) > MAX_ABS_NUMBER) badNumber(v, `params.${k}`);
      }
    }
  }
  const r = headSchema.safeParse(head, { reportInput: true });
  if (!r.success) throw formatIssue(r.error.issues[0]);
  checkGroups(spec);
  const params = parseParams(spec, r.data.params);
  return { spec, head: r.data, params };
}

/** Bit of each turn field in the mask `checkTurn` returns. */
const TURN_FIELD_BIT: Record<keyof Turn, number> = {
  reward: 1,
  anchor: 2,
  invalid: 4,
  agent: 8,
  value: 16,
  q1: 32,
  q2: 64,
  v2: 128,
  infoGain: 256,
  judgeScore: 512,
  segment: 1024,
  tokens: 2048,
  toolResult: 4096,
  highValue: 8192,
};

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

function expectObject(v: unknown, p: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    fail(`${p}: ${v === undefined ? "missing (expected object)" : `expected object, got ${describeValue(v)}`}`, p);
  }
  return v as Record<string, unknown>;
}

function expectArray(v: unknown, p: string, what: string): unknown[] {
  if (!Array.isArray(v)) fail(`${p}: ${v === undefined ? "missing (expected array)" : `expected array, got ${describeValue(v)}`}`, p);
  if (v.length === 0) fail(`${p}: ${what}`, p);
  return v;
}

function expectId(v: unknown, p: string): string {
  if (typeof v !== "string" || v === "") {
    fail(`${p}: ${v === undefined ? "missing (expected string)" : `expected a non-empty string, got ${describeValue(v)}`}`, p);
  }
  return v;
}

function unknownFields(o: Record<string, unknown>, known: ReadonlySet<string>, p: string): never {
  const keys = Object.keys(o).filter((k) => !known.has(k));
  const list = keys.map((k) => JSON.stringify(k)).join(", ");
  return fail(`${p ? p + ": " : ""}unknown field${keys.length > 1 ? "s" : ""} ${list}`, p);
}

/** A finite number within the bound, else an error naming the field. */
function badNumber(v: unknown, p: string, what = "a finite number"): never {
  if (v === undefined) fail(`${p}: missing (expected number)`, p);
  if (typeof v === "number" && Number.isFinite(v)) {
    fail(`${p}: expected ${what} with magnitude at most 1e100, got ${v} (larger values overflow the squared deviations)`, p);
  }
  return fail(`${p}: expected ${what}, got ${describeValue(v)}`, p);
}

const GROUP_KEYS = new Set(["uid", "trajectories"]);
const TRAJ_KEYS = new Set(["id", "turns", "truncated", "envTag"]);
const TURN_KEYS = new Set(Object.keys(TURN_FIELD_BIT));

function checkGroups(groups: unknown, spec: EstimatorSpec): void {
  const gs = expectArray(groups, "groups", "the request needs at least one group");
  let needMask = 0;
  for (const f of spec.needs) needMask |= TURN_FIELD_BIT[f];
  const uids = new Map<string, number>();
  const ids = new Map<string, number>(); // id -> gi * 2^32 + ti of its first trajectory
  for (let gi = 0; gi < gs.length; gi++) {
    const gp = `groups[${gi}]`;
    const g = expectObject(gs[gi], gp);
    for (const k in g) if (!GROUP_KEYS.has(k)) unknownFields(g, GROUP_KEYS, gp);
    const uid = expectId(g.uid, `${gp}.uid`);
    const prev = uids.get(uid);
    if (prev !== undefined) fail(`${gp}.uid: duplicate group uid "${uid}" (first at groups[${prev}])`, `${gp}.uid`);
    uids.set(uid, gi);
    const trajs = expectArray(g.trajectories, `${gp}.trajectories`, "a group needs at least one trajectory");
    for (let ti = 0; ti < trajs.length; ti++) {
      const t = trajs[ti] as Record<string, unknown>;
      if (typeof t !== "object" || t === null || Array.isArray(t)) expectObject(t, `${gp}.trajectories[${ti}]`);
      for (const k in t) if (!TRAJ_KEYS.has(k)) unknownFields(t, TRAJ_KEYS, `${gp}.trajectories[${ti}]`);
      const id = t.id;
      if (typeof id !== "string" || id === "") expectId(id, `${gp}.trajectories[${ti}].id`);
      if (t.truncated !== undefined && typeof t.truncated !== "boolean") {
        fail(`${gp}.trajectories[${ti}].truncated: expected boolean, got ${describeValue(t.truncated)}`, `${gp}.trajectories[${ti}].truncated`);
      }
      if (t.envTag !== undefined && typeof t.envTag !== "string") {
        fail(`${gp}.trajectories[${ti}].envTag: expected string, got ${describeValue(t.envTag)}`, `${gp}.trajectories[${ti}].envTag`);
      }
      const turns = t.turns;
      if (!Array.isArray(turns) || turns.length === 0) expectArray(turns, `${gp}.trajectories[${ti}].turns`, "a trajectory needs at least one turn");
      const list = turns as unknown[];
      let lacking = false;
      for (let i = 0; i < list.length; i++) {
        const mask = checkTurn(list[i], gi, ti, i);
        if ((mask & needMask) !== needMask) lacking = true;
      }
      if (lacking) checkNeeds(spec, list as Turn[], `${gp}.trajectories[${ti}]`); // names the first missing field, or accepts (neededOn)
      const first = ids.get(id as string);
      if (first !== undefined) {
        const at = `groups[${Math.floor(first / 2 ** 32)}].trajectories[${first % 2 ** 32}]`;
        fail(`${gp}.trajectories[${ti}].id: duplicate trajectory id "${id}" (first at ${at})`, `${gp}.trajectories[${ti}].id`);
      }
      ids.set(id as string, gi * 2 ** 32 + ti);
    }
  }
}

const turnPath = (gi: number, ti: number, i: number) => `groups[${gi}].trajectories[${ti}].turns[${i}]`;

/**
 * One turn's fields: types, bounds, unknown fields, anchor nesting. Runs once per turn, so every
 * field is read directly (inline caches see the one shape JSON.parse gives all turns), unknown
 * fields are found by comparing key counts, and paths are built only for an error.
 * Returns the bit mask of the fields present.
 */
function checkTurn(v: unknown, gi: number, ti: number, i: number): number {
  if (typeof v !== "object" || v === null || Array.isArray(v)) expectObject(v, turnPath(gi, ti, i));
  const turn = v as Turn;
  let mask = 0;
  let present = 0;
  let st = 0;
  const r = turn.reward;
  if (typeof r !== "number" || !(r <= MAX_ABS_NUMBER && r >= -MAX_ABS_NUMBER)) badTurnField(turn, gi, ti, i, 1);
  mask = 1;
  present = 1;
  const a = turn.anchor;
  if (a !== undefined) {
    if (typeof a !== "string") checkValue(a, `${turnPath(gi, ti, i)}.anchor`, true);
    mask |= 2;
    present++;
  }
  const inv = turn.invalid;
  if (inv !== undefined) {
    if (typeof inv !== "boolean") badTurnField(turn, gi, ti, i, 4);
    mask |= 4;
    present++;
  }
  const ag = turn.agent;
  if (ag !== undefined) {
    if (typeof ag !== "string" && !(typeof ag === "number" && Number.isFinite(ag))) badTurnField(turn, gi, ti, i, 8);
    mask |= 8;
    present++;
  }
  st = numberState(turn.value);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 16);
    mask |= 16;
    present++;
  }
  st = numberState(turn.q1);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 32);
    mask |= 32;
    present++;
  }
  st = numberState(turn.q2);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 64);
    mask |= 64;
    present++;
  }
  st = numberState(turn.v2);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 128);
    mask |= 128;
    present++;
  }
  st = numberState(turn.infoGain);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 256);
    mask |= 256;
    present++;
  }
  const js = turn.judgeScore;
  if (js !== undefined) {
    if (js !== null && (typeof js !== "number" || !(js <= MAX_ABS_NUMBER && js >= -MAX_ABS_NUMBER))) badTurnField(turn, gi, ti, i, 512);
    mask |= 512;
    present++;
  }
  st = numberState(turn.segment);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 1024);
    mask |= 1024;
    present++;
  }
  const tk = turn.tokens;
  if (tk !== undefined) {
    if (typeof tk !== "number" || !Number.isInteger(tk) || tk < 0) badTurnField(turn, gi, ti, i, 2048);
    mask |= 2048;
    present++;
  }
  const tr = turn.toolResult;
  if (tr !== undefined) {
    if (typeof tr !== "boolean") badTurnField(turn, gi, ti, i, 4096);
    mask |= 4096;
    present++;
  }
  st = numberState(turn.highValue);
  if (st !== 0) {
    if (st < 0) badTurnField(turn, gi, ti, i, 8192);
    mask |= 8192;
    present++;
  }
  let keys = 0;
  for (const _ in turn) keys++;
  if (keys !== present) {
    // an unknown field, or a known one set to undefined (TypeScript callers: allowed)
    const unknown = Object.keys(turn).filter((k) => !TURN_KEYS.has(k));
    if (unknown.length > 0) unknownFields(turn as unknown as Record<string, unknown>, TURN_KEYS, turnPath(gi, ti, i));
  }
  return mask;
}

/** 0: absent, 1: a number within the bound, -1: anything else. */
function numberState(x: unknown): number {
  if (x === undefined) return 0;
  return typeof x === "number" && x <= MAX_ABS_NUMBER && x >= -MAX_ABS_NUMBER ? 1 : -1;
}

/** The error for a turn field that failed its check (`bit` names it in TURN_FIELD_BIT). */
function badTurnField(turn: Turn, gi: number, ti: number, i: number, bit: number): never {
  const field = (Object.keys(TURN_FIELD_BIT) as (keyof Turn)[]).find((k) => TURN_FIELD_BIT[k] === bit)!;
  const p = `${turnPath(gi, ti, i)}.${field}`;
  const x = turn[field];
  switch (field) {
    case "invalid":
    case "toolResult":
      return fail(`${p}: expected boolean, got ${describeValue(x)}`, p);
    case "tokens":
      return fail(`${p}: expected a non-negative integer, got ${describeValue(x)}`, p);
    case "agent":
      return fail(`${p}: expected a string or a finite number, got ${describeValue(x)}`, p);
    case "judgeScore":
      return badNumber(x, p, "a finite number or null (failed judgement)");
    default:
      return badNumber(x, p);
  }
}

/**
 * A JSON value (anchor, parameter) walked with an explicit stack, so any nesting is reported
 * instead of overflowing the call stack: at most MAX_VALUE_DEPTH levels of arrays / objects, and
 * (`strict`, anchors) only JSON values with finite numbers.
 */
export function checkValue(root: unknown, p: string, strict: boolean): void {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v === "string" || typeof v === "boolean") continue;
    if (typeof v === "number") {
      if (strict && !Number.isFinite(v)) fail(`${p}: expected a JSON value, got ${describeValue(v)}`, p);
      continue;
    }
    if (typeof v !== "object") {
      if (strict) fail(`${p}: expected a JSON value, got ${typeName(v)}`, p);
      continue;
    }
    if (!Array.isArray(v) && NON_FINITE_MARKER in v) {
      if (strict) fail(`${p}: anchor contains a non-finite number: ${String((v as Record<string, unknown>)[NON_FINITE_MARKER])}`, p);
      continue; // parameters: their schema names it
    }
    if (depth >= MAX_VALUE_DEPTH) fail(`${p}: nested deeper than ${MAX_VALUE_DEPTH} levels of arrays / objects`, p);
    const children = Array.isArray(v) ? v : Object.values(v as object);
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], depth + 1]);
  }
}

function checkNeeds(spec: EstimatorSpec, turns: Turn[], here: string): void {
  const needs = spec.needs;
  const n = turns.length;
  for (let i = 0; i < n; i++) {
    const turn = turns[i];
    let ctx: TurnContext | undefined;
    for (let f = 0; f < needs.length; f++) {
      const field = needs[f];
      if (turn[field] !== undefined) continue;
      const when = spec.neededOn?.[field];
      if (when) {
        ctx ??= {
          turnIndex: i,
          length: n,
          last: i === n - 1,
          segmentStart: i === 0 || turns[i - 1].segment !== turn.segment,
        };
        if (!when(ctx)) continue;
      }
      const p = `${here}.turns[${i}].${field}`;
      fail(`${p}: missing; estimator "${spec.id}" needs ${field}${when ? "" : " on every turn"}`, p);
    }
  }
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
