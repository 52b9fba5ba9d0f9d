// The launch form's estimator section: shown whenever a job kind's config schema has an
// `estimator` property; its options come from the lib/credit registry (narrowed to the schema's
// enum when it has one), its parameters from the chosen estimator's params schema, sent as
// `config.estimatorParams`. Pure, so it is tested against the registry directly.
import { defaultsOf, schemaFields, type Field, type JsonSchema } from "@/lib/forms/schema-fields";
import type { EstimatorInfo } from "@/lib/schemas/credit";

/** Config keys the estimator section owns (the generic field list skips them). */
export const ESTIMATOR_KEYS = ["estimator", "estimatorParams"] as const;

export interface EstimatorSection {
  options: EstimatorInfo[];
  /** the schema's default estimator, else the first option */
  defaultId: string;
  help?: string;
}

/** The estimator section of a job kind's config schema, or null when it has no `estimator` property. */
export function estimatorSection(configSchema: JsonSchema, catalog: EstimatorInfo[]): EstimatorSection | null {
  const prop = configSchema.properties?.estimator;
  if (!prop) return null;
  const allowed = prop.enum ?? prop.anyOf?.flatMap((s) => s.enum ?? (s.const !== undefined ? [s.const] : []));
  const options = allowed?.length ? catalog.filter((e) => allowed.includes(e.id)) : catalog;
  if (!options.length) return null;
  const def = typeof prop.default === "string" && options.some((o) => o.id === prop.default) ? prop.default : options[0].id;
  return { options, defaultId: def, help: prop.description };
}

export function estimatorParamFields(info: EstimatorInfo | undefined): Field[] {
  return info ? schemaFields(info.paramsSchema) : [];
}

/** Defaults of an estimator's params, overlaid with the given values (clone and edit keeps them). */
export function estimatorParamValues(info: EstimatorInfo | undefined, given?: unknown): Record<string, unknown> {
  const fields = estimatorParamFields(info);
  const known = new Set(fields.map((f) => f.name));
  const g = given && typeof given === "object" && !Array.isArray(given) ? (given as Record<string, unknown>) : {};
  return { ...defaultsOf(fields), ...Object.fromEntries(Object.entries(g).filter(([k]) => known.has(k))) };
}
