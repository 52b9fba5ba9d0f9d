// Limits on any JSON value the API accepts (bodies and the free-form parts of them: config, info,
// params, diagnostics). Checked iteratively, so a value nested 10^6 deep is an error naming the
// field, never a stack overflow; and bounded before anything is stored, so one stored run cannot
// later break a query (SQLite's JSON functions refuse depth > 1000).
import { InvalidInputError } from "./errors";

export interface JsonLimits {
  /** deepest nesting of arrays/objects (the top-level value is depth 1) */
  maxDepth: number;
  /** longest string (UTF-16 units) */
  maxString: number;
  /** longest array */
  maxArray: number;
  /** most keys in one object */
  maxKeys: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = {
  maxDepth: Number(process.env.TURNLENS_MAX_JSON_DEPTH ?? 64),
  maxString: 4 * 1024 * 1024,
  maxArray: 1_000_000,
  maxKeys: 10_000,
};

function fieldPath(root: string, path: (string | number)[]): string {
  return [root, ...path.map(String)].join(".");
}

// JSON.parse reads a literal beyond the double range (1e309) as Infinity, which JSON.stringify would
// store as null: refused instead (x - x is NaN only for a non-finite number).
const NOT_FINITE = "number out of range: it overflows to Infinity (a double holds at most about 1.8e308)";

// A JSON escape can spell half of a UTF-16 surrogate pair ("\ud800"), which is no character: stored
// as UTF-8 it would become U+FFFD, so it is refused as invalid UTF-8 is. isWellFormed is one pass
// over a two-byte string and free on a one-byte (Latin-1) one, which most text is.
const LONE_SURROGATE = "holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text";
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string };
const wellFormed = (s: string) => (s as Es2024String).isWellFormed();

/** What is wrong with a string of a JSON value (too long, a lone surrogate), or null. */
function stringProblem(s: string, limits: JsonLimits): string | null {
  if (s.length > limits.maxString) return `string longer than ${limits.maxString} characters`;
  return wellFormed(s) ? null : LONE_SURROGATE;
}

/** The first violation as `{path, message}`, or null. Never recurses. */
export function findJsonViolation(value: unknown, limits: JsonLimits = DEFAULT_JSON_LIMITS): { path: (string | number)[]; message: string } | null {
  // explicit stack of [value, depth, path]; paths are materialised only on a violation
  const stack: [unknown, number, (string | number)[]][] = [[value, 1, []]];
  while (stack.length) {
    const [v, depth, path] = stack.pop()!;
    if (typeof v === "string") {
      const bad = stringProblem(v, limits);
      if (bad) return { path, message: bad };
      continue;
    }
    if (typeof v === "number" && v - v !== 0) return { path, message: NOT_FINITE };
    if (v === null || typeof v !== "object") continue;
    if (depth > limits.maxDepth) return { path, message: `nested deeper than ${limits.maxDepth} levels` };
    if (Array.isArray(v)) {
      if (v.length > limits.maxArray) return { path, message: `array longer than ${limits.maxArray} items` };
      for (let i = v.length - 1; i >= 0; i--) {
        const x = v[i];
        if (x !== null && typeof x === "object") stack.push([x, depth + 1, [...path, i]]);
        else if (typeof x === "number") {
          if (x - x !== 0) return { path: [...path, i], message: NOT_FINITE };
        } else if (typeof x === "string") {
          const bad = stringProblem(x, limits);
          if (bad) return { path: [...path, i], message: bad };
        }
      }
    } else {
      const keys = Object.keys(v);
      if (keys.length > limits.maxKeys) return { path, message: `object with more than ${limits.maxKeys} keys` };
      for (let i = keys.length - 1; i >= 0; i--) {
        const x = (v as Record<string, unknown>)[keys[i]];
        if (keys[i].length > limits.maxString) return { path, message: "key too long" };
        // the key named as it reads (U+FFFD in the surrogate's place), as an invalid UTF-8 key is
        if (!wellFormed(keys[i])) return { path: [...path, (keys[i] as Es2024String).toWellFormed()], message: `its key ${LONE_SURROGATE}` };
        if (x !== null && typeof x === "object") stack.push([x, depth + 1, [...path, keys[i]]]);
        else if (typeof x === "number") {
          if (x - x !== 0) return { path: [...path, keys[i]], message: NOT_FINITE };
        } else if (typeof x === "string") {
          const bad = stringProblem(x, limits);
          if (bad) return { path: [...path, keys[i]], message: bad };
        }
      }
    }
  }
  return null;
}

/** Throws InvalidInputError (400) naming the field (rooted at `root`, e.g. "body") when the value breaks a limit. */
export function assertJsonLimits(value: unknown, root: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): void {
  const v = findJsonViolation(value, limits);
  if (v) {
    const path = fieldPath(root, v.path);
    throw new InvalidInputError(`invalid ${root}: ${path}: ${v.message}`, [{ path, message: v.message }]);
  }
}

/** Parses request text as JSON within the limits; 400 naming the problem otherwise. */
export function parseJsonText(text: string, root = "body", limits: JsonLimits = DEFAULT_JSON_LIMITS): unknown {
  if (!text.trim()) throw new InvalidInputError(`request ${root} is empty; expected JSON`, [{ path: root, message: "required" }]);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new InvalidInputError(`request ${root} is not valid JSON: ${(e as Error).message}`, [{ path: root, message: "invalid JSON" }]);
  }
  assertJsonLimits(value, root, limits);
  return value;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });
// stands for the first invalid sequence while the field holding it is looked for (private-use characters)
const MARK = "\ue000\ue001invalid\ue001\ue000";

/**
 * Parses a request body (UTF-8 bytes) as JSON within the limits. Invalid UTF-8 anywhere is a 400
 * naming the field that holds it, not text silently stored with U+FFFD in its place.
 */
export function parseJsonBytes(bytes: Uint8Array, root = "body", limits: JsonLimits = DEFAULT_JSON_LIMITS): unknown {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    const path = fieldPath(root, invalidUtf8Path(bytes) ?? []);
    throw new InvalidInputError(`invalid ${root}: ${path}: not valid UTF-8`, [{ path, message: "not valid UTF-8" }]);
  }
  return parseJsonText(text, root, limits);
}

/** Where in the JSON the first invalid UTF-8 sequence is (a string or a key), or null outside any. Only runs on a refusal. */
function invalidUtf8Path(bytes: Uint8Array): (string | number)[] | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lenient = buf.toString("utf8"); // each invalid sequence as U+FFFD
  // valid bytes round-trip: the first byte that does not is where the first invalid sequence starts
  const again = Buffer.from(lenient, "utf8");
  let bad = 0;
  while (bad < buf.length && buf[bad] === again[bad]) bad++;
  const at = buf.subarray(0, bad).toString("utf8").length;
  let value: unknown;
  try {
    value = JSON.parse(lenient.slice(0, at) + MARK + lenient.slice(at + 1));
  } catch {
    return null;
  }
  const stack: [unknown, (string | number)[]][] = [[value, []]];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === "string") {
      if (v.includes(MARK)) return path;
    } else if (Array.isArray(v))
      v.forEach((x, i) => {
        stack.push([x, [...path, i]]);
      });
    else if (v !== null && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (k.includes(MARK)) return [...path, k.replace(MARK, "\ufffd")];
        stack.push([x, [...path, k]]);
      }
  }
  return null;
}
