// The JSON Schema subset our zod schemas produce (z.toJSONSchema) and the UI reads: the launch
// catalog (lib/runs/catalog.ts) returns it, the generated forms (lib/forms) walk it.
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  default?: unknown;
  description?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
}
