// Browser-side validation of the launch form with the server's own zod schemas: the request body
// against launchRunSchema (lib/schemas/runs.ts, pure zod), the environment's and the estimator's
// parameters against zod schemas rebuilt from the catalog's JSON Schema (their zod originals live
// with the environment code, too heavy for the browser). The server parses again and stays the
// authority; its issues are routed to the same fields by issuePathKey.
import { z } from "zod";
import type { JsonSchema } from "./schema-fields";

/** What a JSON box holds while its text does not parse: Launch is blocked and the field says why. */
export class InvalidJson {
  constructor(
    readonly text: string,
    readonly error: string,
  ) {}
}

/** Field errors by form section ("top": name and tags) and dotted field path ("model.layers"). */
export type FieldErrors = Record<string, Record<string, string>>;

export const zodFromJsonSchema = (s: JsonSchema): z.ZodType => z.fromJSONSchema(s as Parameters<typeof z.fromJSONSchema>[0]);

/** A zod issue in plain words ("must be greater than 0", not "Too small: expected number to be >0"). */
export function plainIssue(i: z.core.$ZodIssue): string {
  const n = (v: unknown) => (typeof v === "bigint" ? Number(v) : (v as number));
  switch (i.code) {
    case "too_small":
      if (i.origin === "string") return n(i.minimum) <= 1 ? "must not be empty" : `must have at least ${n(i.minimum)} characters`;
      if (i.origin === "array" || i.origin === "set") return `must have at least ${n(i.minimum)} items`;
      return i.inclusive === false ? `must be greater than ${n(i.minimum)}` : `must be at least ${n(i.minimum)}`;
    case "too_big":
      if (i.origin === "string") return `must have at most ${n(i.maximum)} characters`;
      if (i.origin === "array" || i.origin === "set") return `must have at most ${n(i.maximum)} items`;
      return i.inclusive === false ? `must be less than ${n(i.maximum)}` : `must be at most ${n(i.maximum)}`;
    case "invalid_type":
      if (/received undefined$/.test(i.message)) return "required";
      if (i.expected === "int") return "must be a whole number";
      if (i.expected === "number") return "must be a number";
      return `must be a ${i.expected}`;
    case "not_multiple_of":
      return `must be a multiple of ${n(i.divisor)}`;
    case "invalid_value":
      return `must be one of: ${i.values.map(String).join(", ")}`;
    case "unrecognized_keys":
      return `unknown field${i.keys.length > 1 ? "s" : ""}: ${i.keys.join(", ")}`;
    case "invalid_union":
      return "does not match any allowed form";
    case "invalid_format":
      return i.message.replace(/^Invalid string: /, "must be ");
    default:
      return plainMessage(i.message);
  }
}

/** The server's zod messages in plain words (its issues carry text only, not the issue object). */
export function plainMessage(m: string): string {
  const r: [RegExp, (...g: string[]) => string][] = [
    // [^=]: ">=1" is "at least", below, not "greater than =1"
    [/^Too small: expected number to be >([^=]\S*)$/, (x) => `must be greater than ${x}`],
    [/^Too small: expected number to be >=(\S+)$/, (x) => `must be at least ${x}`],
    [/^Too big: expected number to be <([^=]\S*)$/, (x) => `must be less than ${x}`],
    [/^Too big: expected number to be <=(\S+)$/, (x) => `must be at most ${x}`],
    [/^Too small: expected string to have >=1 characters?$/, () => "must not be empty"],
    [/^Too small: expected string to have >=(\d+) characters?$/, (x) => `must have at least ${x} characters`],
    [/^Too big: expected string to have <=(\d+) characters?$/, (x) => `must have at most ${x} characters`],
    [/^Too big: expected array to have <=(\d+) items?$/, (x) => `must have at most ${x} items`],
    [/^Invalid input: expected \w+, received undefined$/, () => "required"],
    [/^Invalid input: expected int, received .*$/, () => "must be a whole number"],
    [/^Invalid input: expected (\w+), received .*$/, (x) => `must be a ${x}`],
    [/^Invalid option: expected one of (.*)$/, (x) => `must be one of: ${x.replaceAll('"', "").replaceAll("|", ", ")}`],
  ];
  for (const [re, f] of r) {
    const m2 = m.match(re);
    if (m2) return f(...m2.slice(1));
  }
  return m;
}

/**
 * Where an issue belongs in the form, from its path in the launch body (a client parse gives
 * ["config", "lr"], the server "body.config.lr"): [section, field path] or null (a banner).
 */
export function issuePathKey(path: (string | number)[] | string): [string, string] | null {
  const parts =
    typeof path === "string"
      ? path
          .replace(/^body\.?/, "")
          .split(".")
          .filter(Boolean)
      : path.map(String);
  if (parts[0] === "name" || parts[0] === "tags") return ["top", parts[0]];
  if (parts[0] !== "config" || parts.length < 2) return null;
  if (parts[1] === "envConfig") return parts.length > 2 ? ["env", parts.slice(2).join(".")] : ["env", "_"];
  if (parts[1] === "estimatorParams") return parts.length > 2 ? ["est", parts.slice(2).join(".")] : ["est", "_"];
  if (parts[1] === "estimator") return ["est", "estimator"];
  if (parts[1] === "envId") return ["env", "envId"];
  return ["job", parts.slice(1).join(".")];
}

/** The dotted paths of every InvalidJson in a value (a JSON box whose text does not parse). */
export function invalidJsonPaths(v: unknown, at = ""): [string, string][] {
  if (v instanceof InvalidJson) return [[at, v.error]];
  if (!v || typeof v !== "object") return [];
  return Object.entries(v).flatMap(([k, x]) => invalidJsonPaths(x, at ? `${at}.${k}` : k));
}

/** Adds an issue to the errors (the first one per field wins). */
export function addError(errors: FieldErrors, key: [string, string] | null, message: string, banner: string[]): void {
  if (!key) {
    banner.push(message);
    return;
  }
  const [section, field] = key;
  errors[section] ??= {};
  errors[section][field] ??= message;
}
