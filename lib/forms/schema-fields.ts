// Turns a JSON Schema object (made from our zod schemas with z.toJSONSchema) into form fields, so
// every launch form is generated from the one schema the API validates with.
import type { JsonSchema } from "../schemas/json-schema";

export type { JsonSchema };

/** One choice of a discriminated union (`model.kind`, `context.strategy`): its tag and its own fields. */
export interface Variant {
  tag: string;
  fields: Field[];
}

export type Field =
  | {
      name: string;
      kind: "number";
      integer: boolean;
      min?: number;
      max?: number;
      minExclusive?: boolean;
      maxExclusive?: boolean;
      default?: number | null;
      nullable?: boolean;
      help?: string;
    }
  | { name: string; kind: "boolean"; default?: boolean; help?: string }
  | { name: string; kind: "enum"; options: string[]; default?: string; help?: string }
  | { name: string; kind: "string"; default?: string; help?: string }
  | { name: string; kind: "json"; default?: unknown; help?: string }
  /** a nested object with fields of its own (nullable: a checkbox turns it off, e.g. LoRA) */
  | { name: string; kind: "object"; fields: Field[]; default?: unknown; nullable?: boolean; help?: string }
  /** a discriminated union: a select for `discriminator`, then the chosen variant's fields */
  | { name: string; kind: "variant"; discriminator: string; variants: Variant[]; default?: unknown; help?: string };

export function schemaFields(schema: JsonSchema, skip: string[] = []): Field[] {
  return Object.entries(schema.properties ?? {})
    .filter(([name]) => !skip.includes(name))
    .map(([name, s]) => fieldOf(name, s));
}

function fieldOf(name: string, s: JsonSchema): Field {
  // zod's `.nullable()` becomes anyOf [T, {type: "null"}]: render T, and let an empty box mean null.
  const nonNull = s.anyOf?.filter((x) => x.type !== "null");
  if (nonNull?.length === 1 && s.anyOf!.length === 2) {
    const f = fieldOf(name, { ...nonNull[0], description: s.description ?? nonNull[0].description, default: s.default });
    return f.kind === "number" || f.kind === "object" ? { ...f, nullable: true } : f;
  }
  const union = s.oneOf ?? s.anyOf;
  const variants = union && discriminated(union);
  if (variants) return { name, kind: "variant", ...variants, default: s.default, help: s.description };
  const help = s.description;
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  if (s.enum?.every((v) => typeof v === "string")) return { name, kind: "enum", options: s.enum as string[], default: s.default as string, help };
  if (type === "integer" || type === "number")
    return {
      name,
      kind: "number",
      integer: type === "integer",
      min: s.minimum ?? s.exclusiveMinimum,
      max: s.maximum ?? s.exclusiveMaximum,
      minExclusive: s.minimum === undefined && s.exclusiveMinimum !== undefined,
      maxExclusive: s.maximum === undefined && s.exclusiveMaximum !== undefined,
      default: s.default as number,
      help,
    };
  if (type === "boolean") return { name, kind: "boolean", default: s.default as boolean, help };
  if (type === "string") return { name, kind: "string", default: s.default as string, help };
  if (type === "object" && s.properties && Object.keys(s.properties).length) return { name, kind: "object", fields: schemaFields(s), default: s.default, help };
  return { name, kind: "json", default: s.default, help };
}

/** Client-side check mirroring the schema's bounds; the server's zod parse stays the authority. */
export function checkField(f: Field, v: unknown): string | null {
  if (f.kind !== "number") return null;
  if (f.nullable && (v === null || (typeof v === "number" && Number.isNaN(v)))) return null;
  if (typeof v !== "number" || Number.isNaN(v)) return "must be a number";
  if (f.integer && !Number.isInteger(v)) return "must be a whole number";
  if (f.min !== undefined && (f.minExclusive ? v <= f.min : v < f.min)) return f.minExclusive ? `must be greater than ${f.min}` : `must be at least ${f.min}`;
  if (f.max !== undefined && (f.maxExclusive ? v >= f.max : v > f.max)) return f.maxExclusive ? `must be less than ${f.max}` : `must be at most ${f.max}`;
  return null;
}

/**
 * A union whose every option is an object with one shared `const` property (zod's discriminated
 * union in JSON Schema): the variants by tag, each without the tag field. Else null.
 */
function discriminated(options: JsonSchema[]): { discriminator: string; variants: Variant[] } | null {
  if (!options.length || !options.every((o) => o.type === "object" && o.properties)) return null;
  const key = Object.keys(options[0].properties!).find((k) => options.every((o) => o.properties![k]?.const !== undefined));
  if (!key) return null;
  return { discriminator: key, variants: options.map((o) => ({ tag: String(o.properties![key].const), fields: schemaFields(o, [key]) })) };
}

/** The value a nested field starts from: its own default, else its sub-fields' defaults. */
export function initialValue(f: Field): unknown {
  if (f.default !== undefined) return f.default;
  if (f.kind === "object") return f.nullable ? null : defaultsOf(f.fields);
  if (f.kind === "variant") return variantDefaults(f, f.variants[0].tag);
  return undefined;
}

/** A fresh value for a union's variant: its tag and the defaults of its fields. */
export function variantDefaults(f: Extract<Field, { kind: "variant" }>, tag: string): Record<string, unknown> {
  const v = f.variants.find((x) => x.tag === tag) ?? f.variants[0];
  return { [f.discriminator]: v.tag, ...defaultsOf(v.fields) };
}

export function defaultsOf(fields: Field[]): Record<string, unknown> {
  return Object.fromEntries(
    fields.map((f) => [f.name, f.kind === "object" || f.kind === "variant" ? initialValue(f) : f.default]).filter(([, v]) => v !== undefined),
  );
}
