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
 * and the command's fast path (cli/credit/fast-path.ts) share it.
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

/** How a turn field's value is checked (one entry of TURN_FIELDS). */
enum Check {
  /** A finite number within MAX_ABS_NUMBER. */
  Number,
  Boolean,
  /** Any JSON value, nested at most MAX_VALUE_DEPTH levels, numbers finite. */
  Anchor,
  /** A string or a finite number. */
  Agent,
  /** A number within the bound, or null (a failed judgement). */
  JudgeScore,
  /** A non-negative integer. */
  Tokens,
}

/** The turn fields, in the order a turn's problems are reported; field i is bit 1 << i of a turn's mask. */
const TURN_FIELDS: readonly { name: keyof Turn; check: Check }[] = [
  { name: "reward", check: Check.Number },
  { name: "anchor", check: Check.Anchor },
  { name: "invalid", check: Check.Boolean },
  { name: "agent", check: Check.Agent },
  { name: "value", check: Check.Number },
  { name: "q1", check: Check.Number },
  { name: "q2", check: Check.Number },
  { name: "v2", check: Check.Number },
  { name: "infoGain", check: Check.Number },
  { name: "judgeScore", check: Check.JudgeScore },
  { name: "segment", check: Check.Number },
  { name: "tokens", check: Check.Tokens },
  { name: "toolResult", check: Check.Boolean },
  { name: "highValue", check: Check.Number },
];

/** Field name -> its index in TURN_FIELDS. */
const TURN_FIELD_INDEX = new Map(TURN_FIELDS.map((f, i) => [f.name as string, i]));
const TURN_CHECKS = TURN_FIELDS.map((f) => f.check);
const TURN_KEYS: ReadonlySet<string> = new Set(TURN_FIELD_INDEX.keys());

// The keys of the last turn checked, by position, with their field index (-1: not a field): turns
// of a request have the same keys in the same order, so a key is found by one comparison with
// the key at its position in the turn before instead of a look-up.
const lastKeys: string[] = [];
const lastIndex: number[] = [];

/** Index in TURN_FIELDS of the turn key k at position j of its turn, -1 if it is not a field. */
function fieldAt(k: string, j: number): number {
  if (lastKeys[j] === k) return lastIndex[j];
  const f = TURN_FIELD_INDEX.get(k) ?? -1;
  if (j < 32) {
    lastKeys[j] = k;
    lastIndex[j] = f;
  }
  return f;
}

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

function checkGroups(groups: unknown, spec: EstimatorSpec): void {
  const gs = expectArray(groups, "groups", "the request needs at least one group");
  let needMask = 0;
  for (const f of spec.needs) needMask |= 1 << TURN_FIELD_INDEX.get(f)!;
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
 * One turn's fields: types, bounds, unknown fields, anchor nesting, each field checked as
 * TURN_FIELDS says. Runs once per turn: the turn's own keys are walked once (no path built);
 * a turn with any problem goes to `reportTurn`, which names the first one in TURN_FIELDS order.
 * Returns the bit mask of the fields present (a field set to undefined counts as absent).
 */
function checkTurn(v: unknown, gi: number, ti: number, i: number): number {
  if (typeof v !== "object" || v === null || Array.isArray(v)) expectObject(v, turnPath(gi, ti, i));
  const turn = v as Record<string, unknown>;
  let mask = 0;
  let bad = false;
  let j = 0;
  for (const k in turn) {
    const f = fieldAt(k, j++);
    const x = turn[k];
    if (f < 0) bad = true;
    else if (x !== undefined) {
      if (!fieldOk(TURN_CHECKS[f], x)) bad = true;
      mask |= 1 << f;
    }
  }
  if (bad || (mask & 1) === 0) reportTurn(turn, turnPath(gi, ti, i));
  return mask;
}

/** Whether a present value passes its field's check. */
function fieldOk(check: Check, x: unknown): boolean {
  switch (check) {
    case Check.Number:
      return typeof x === "number" && x <= MAX_ABS_NUMBER && x >= -MAX_ABS_NUMBER;
    case Check.Boolean:
      return typeof x === "boolean";
    case Check.Anchor:
      return typeof x === "string" || anchorOk(x);
    case Check.Agent:
      return typeof x === "string" || (typeof x === "number" && Number.isFinite(x));
    case Check.JudgeScore:
      return x === null || (typeof x === "number" && x <= MAX_ABS_NUMBER && x >= -MAX_ABS_NUMBER);
    case Check.Tokens:
      return typeof x === "number" && Number.isInteger(x) && x >= 0;
  }
}

function anchorOk(x: unknown): boolean {
  try {
    checkValue(x, "anchor", true);
    return true;
  } catch {
    return false; // reportTurn checks it again with its path
  }
}

/** Throws the error for a turn's first problem: a field in TURN_FIELDS order (reward is required), then unknown fields. */
function reportTurn(turn: Record<string, unknown>, tp: string): void {
  for (const { name, check } of TURN_FIELDS) {
    const x = turn[name];
    if (x === undefined && name !== "reward") continue;
    if (x !== undefined && fieldOk(check, x)) continue;
    const p = `${tp}.${name}`;
    switch (check) {
      case Check.Boolean:
        fail(`${p}: expected boolean, got ${describeValue(x)}`, p);
        break;
      case Check.Tokens:
        fail(`${p}: expected a non-negative integer, got ${describeValue(x)}`, p);
        break;
      case Check.Agent:
        fail(`${p}: expected a string or a finite number, got ${describeValue(x)}`, p);
        break;
      case Check.Anchor:
        checkValue(x, p, true);
        break;
      case Check.JudgeScore:
        badNumber(x, p, "a finite number or null (failed judgement)");
        break;
      default:
        badNumber(x, p);
    }
  }
  if (Object.keys(turn).some((k) => !TURN_KEYS.has(k))) unknownFields(turn, TURN_KEYS, tp);
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
