// The monitors editor's fields for one alert rule, generated from the rule schema the API validates
// with (lib/schemas/alerts.ts), and the server's issues on a rules body routed to their rule and field.
import { z } from "zod";
import { alertRuleSchema, type AlertRule } from "../schemas/alerts";
import { schemaFields, type Field, type JsonSchema } from "./schema-fields";
import { plainMessage } from "./validate";

const js = z.toJSONSchema(alertRuleSchema, { io: "input", unrepresentable: "any" }) as JsonSchema & { $defs?: Record<string, JsonSchema> };

/** Every field of a rule, in the schema's order. */
export const ALERT_RULE_FIELDS: Field[] = schemaFields(js.$defs?.AlertRule ?? js);

/** Each field's help, shown once above the rules rather than in every rule's card. */
export const ALERT_RULE_HELP: [string, string][] = ALERT_RULE_FIELDS.filter((f) => f.help).map((f) => [f.name, f.help!]);

const withoutHelp = ALERT_RULE_FIELDS.map((f) => ({ ...f, help: undefined }));

/** The fields a rule of this kind reads (`change` is trend's, `minValue` growth's), without their help. */
export function ruleFields(kind: AlertRule["kind"]): Field[] {
  return withoutHelp.filter((f) => (f.name !== "change" || kind === "trend") && (f.name !== "minValue" || kind === "growth"));
}

/** A rule after one field's edit; a rule turned into a trend rule gets a `change` (it needs one). */
export function editRule(r: AlertRule, name: string, value: unknown): AlertRule {
  const next = { ...r, [name]: value } as AlertRule;
  if (name === "kind" && value === "trend" && !next.change) next.change = "ratio";
  if (name === "kind" && value === "drift") next.metric = "diag/advantage";
  return next;
}

/** Errors of a rules body by where they show: `rules.N` (a rule's fields), `webhookUrl`, or the banner. */
export interface RuleErrors {
  rules: Record<number, Record<string, string>>;
  webhookUrl?: string;
  banner: string[];
}

/** The server's issues ("body.rules.2.value") routed to their rule and field, in plain words. */
export function ruleErrors(issues: readonly { path: string; message: string }[]): RuleErrors {
  const out: RuleErrors = { rules: {}, banner: [] };
  for (const i of issues) {
    const parts = i.path.replace(/^body\.?/, "").split(".");
    const msg = plainMessage(i.message);
    if (parts[0] === "rules" && parts.length >= 3) {
      const n = Number(parts[1]);
      out.rules[n] ??= {};
      out.rules[n][parts[2]] ??= msg;
    } else if (parts[0] === "webhookUrl") out.webhookUrl ??= msg;
    else out.banner.push(parts[0] ? `${parts.join(".")}: ${msg}` : msg);
  }
  return out;
}
