// Monitors and alerts: a project's rules on a run's metrics and per-step diagnostics, the default
// rules for the collapse signals, and the one evaluation of a rule over a series (pure; the store,
// lib/db/alerts.ts, reads the points, keeps how far each rule has read and writes the alerts).
//
// Every rule compares the mean of the last `k` points of its series (the window) with something:
// - threshold: the window's mean against `value`;
// - trend: against the mean of the series' first k points (the baseline), as a ratio or a difference;
// - growth: the window's mean over the mean of the k points before it (KL acceleration), at least `minValue`;
// - drift: the 1-Wasserstein distance of each step's advantage distribution to the baseline's
//   (the mean quantile function of the first k steps: their 1-D Wasserstein barycenter), in units of
//   the baseline's advantage std; the window's mean against `value`.
// trend and drift windows start after the baseline (they never compare a step with itself), and a
// growth window needs k points before it: a rule is silent on the first 2k points of its series.
import { z } from "zod";
import { idSchema, queryInt } from "./common";

export const ALERT_RULE_KINDS = ["threshold", "trend", "growth", "drift"] as const;

/** A metric key, or "diag/<field>" of a step's credit diagnostics (lib/schemas/credit.ts), or "diag/advantage" (drift). */
export const DIAGNOSTIC_PREFIX = "diag/";

export const alertRuleSchema = z
  .object({
    id: idSchema.describe("Unique within the project; alerts name their rule by it."),
    name: z.string().min(1).max(120).optional(),
    metric: z
      .string()
      .min(1)
      .max(200)
      .describe('A metric key (e.g. "actor/entropy") or "diag/<diagnostic>" (e.g. "diag/zeroVarianceShare"); drift reads "diag/advantage".'),
    kind: z.enum(ALERT_RULE_KINDS),
    k: z.number().int().min(1).max(100).default(5).describe("Window (and baseline) length in points of the series."),
    op: z.enum(["above", "below"]).default("above").describe("Which side of the value fires the rule."),
    value: z
      .number()
      .finite()
      .describe(
        "threshold: the window's mean; trend: its ratio to or difference from the baseline; growth: its ratio to the k points before; drift: W1 in baseline std.",
      ),
    change: z.enum(["ratio", "difference"]).optional().describe("trend: the window's mean over (ratio) or minus (difference) the baseline's."),
    minValue: z.number().finite().optional().describe("growth: the window's mean must reach it too (no alert on noise around 0)."),
    enabled: z.boolean().default(true).describe("Off: the rule is kept but not evaluated."),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.kind === "trend" && !r.change) ctx.addIssue({ code: "custom", path: ["change"], message: "a trend rule needs change: ratio or difference" });
    if (r.kind === "drift" && r.metric !== "diag/advantage") ctx.addIssue({ code: "custom", path: ["metric"], message: 'a drift rule reads "diag/advantage"' });
  })
  .meta({ id: "AlertRule" });
export type AlertRule = z.output<typeof alertRuleSchema>;

const webhookUrlSchema = z
  .string()
  .max(2000)
  .refine((u) => {
    try {
      const p = new URL(u).protocol;
      return p === "http:" || p === "https:";
    } catch {
      return false;
    }
  }, "must be an http:// or https:// URL");

export const alertConfigBodySchema = z
  .object({
    rules: z
      .array(alertRuleSchema)
      .max(50)
      .refine((rs) => new Set(rs.map((r) => r.id)).size === rs.length, "rule ids must be unique"),
    webhookUrl: webhookUrlSchema.nullable().default(null).describe("Receives a JSON POST per alert (retried with back-off); null: none."),
  })
  .strict();
export type AlertConfigBody = z.output<typeof alertConfigBodySchema>;

export const alertConfigSchema = z
  .object({
    projectId: z.string(),
    rules: z.array(alertRuleSchema),
    webhookUrl: z.string().nullable(),
    defaults: z.boolean().describe("true: the project has no rules of its own and is watched by the default rules."),
  })
  .meta({ id: "AlertConfig" });
export type AlertConfig = z.output<typeof alertConfigSchema>;

/**
 * The collapse signals' rules, for a project that has none of its own (docs/alerts.md gives each one's
 * reason). Metric keys are verl's names, which TRL's and OpenRLHF's importers map onto.
 */
export const DEFAULT_ALERT_RULES: readonly AlertRule[] = [
  // policy entropy collapsing: exploration is gone before the reward says so
  { id: "entropy-falling", name: "Entropy falling", metric: "actor/entropy", kind: "trend", k: 5, op: "below", value: 0.5, change: "ratio", enabled: true },
  // Echo Trap: more task groups whose trajectories all score alike (no group-relative signal)
  {
    id: "zero-variance-rising",
    name: "Zero-variance share rising",
    metric: "diag/zeroVarianceShare",
    kind: "trend",
    k: 5,
    op: "above",
    value: 0.3,
    change: "difference",
    enabled: true,
  },
  // PPO's clip active on a fifth of the tokens: updates pushing against the trust region
  { id: "clip-ratio-high", name: "Clip ratio high", metric: "actor/pg_clipfrac", kind: "threshold", k: 5, op: "above", value: 0.2, enabled: true },
  // a tenth of the responses end at the length cap: length hacking or a degenerate loop
  {
    id: "length-at-cap",
    name: "Responses at the length cap",
    metric: "response_length/clip_ratio",
    kind: "threshold",
    k: 5,
    op: "above",
    value: 0.1,
    enabled: true,
  },
  // KL to the reference doubling over 5 steps once it matters
  { id: "kl-accelerating", name: "KL accelerating", metric: "actor/kl_loss", kind: "growth", k: 5, op: "above", value: 2, minValue: 0.01, enabled: true },
  // the advantage distribution has moved half a baseline std (W1) from the first steps'
  { id: "advantage-drift", name: "Advantage distribution drift", metric: "diag/advantage", kind: "drift", k: 5, op: "above", value: 0.5, enabled: true },
];

/** A point of a rule's series; drift's carry the step's advantage quantiles (`q`) and its std as `value`. */
export interface SeriesPoint {
  step: number;
  value: number;
  q?: readonly number[];
}

export interface RuleVerdict {
  step: number;
  holds: boolean;
  /** what the rule compared with its value (null: the rule could not be evaluated at this step) */
  value: number | null;
}

/** Quantiles at the midpoints of 20 equal bins: W1 of two distributions is the mean |difference| of theirs. */
export const QUANTILE_LEVELS = Array.from({ length: 20 }, (_, i) => (i + 0.5) / 20);

/** `QUANTILE_LEVELS` of the values (linear interpolation between order statistics); null when empty. */
export function quantiles(values: readonly number[]): number[] | null {
  if (!values.length) return null;
  const s = Float64Array.from(values).sort();
  return QUANTILE_LEVELS.map((u) => {
    const x = u * (s.length - 1);
    const lo = Math.floor(x);
    const hi = Math.min(lo + 1, s.length - 1);
    return s[lo] + (s[hi] - s[lo]) * (x - lo);
  });
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The rule at each of `points[from..]`: `points` are the series in step order (at least the 2k - 1
 * points before `from` where the series has them), `baseline` its first k points.
 */
export function evaluateRule(rule: AlertRule, baseline: readonly SeriesPoint[], points: readonly SeriesPoint[], from: number): RuleVerdict[] {
  const k = rule.k;
  const out: RuleVerdict[] = [];
  const needsBaseline = rule.kind === "trend" || rule.kind === "drift";
  const baseEnd = baseline.length ? baseline[baseline.length - 1].step : Infinity;
  const baseMean = baseline.length === k ? mean(baseline.map((p) => p.value)) : null;
  let bq: number[] | null = null;
  if (rule.kind === "drift" && baseline.length === k && baseline.every((p) => p.q)) {
    bq = QUANTILE_LEVELS.map((_, j) => mean(baseline.map((p) => p.q![j])));
  }
  // drift: each point's W1 to the baseline, in the baseline's std
  const pointValue = (p: SeriesPoint): number | null => {
    if (rule.kind !== "drift") return p.value;
    if (!bq || !p.q || !baseMean) return null;
    return mean(p.q.map((x, j) => Math.abs(x - bq![j]))) / baseMean;
  };
  for (let i = from; i < points.length; i++) {
    const step = points[i].step;
    const silent = { step, holds: false, value: null };
    if (i - k + 1 < 0 || (needsBaseline && (baseMean === null || points[i - k + 1].step <= baseEnd))) {
      out.push(silent);
      continue;
    }
    const win = points.slice(i - k + 1, i + 1).map(pointValue);
    if (win.some((v) => v === null)) {
      out.push(silent);
      continue;
    }
    const w = mean(win as number[]);
    let v: number | null = w;
    if (rule.kind === "trend") v = rule.change === "ratio" ? (baseMean! > 0 ? w / baseMean! : null) : w - baseMean!;
    if (rule.kind === "growth") {
      if (i - 2 * k + 1 < 0) {
        out.push(silent);
        continue;
      }
      const prev = mean(points.slice(i - 2 * k + 1, i - k + 1).map((p) => p.value));
      v = prev > 0 ? w / prev : null;
      if (v !== null && w < (rule.minValue ?? 0)) {
        out.push({ step, holds: false, value: v });
        continue;
      }
    }
    out.push({ step, holds: v !== null && (rule.op === "above" ? v > rule.value : v < rule.value), value: v });
  }
  return out;
}

const fmt = (x: number) => (Math.abs(x) >= 100 || x === 0 ? x.toFixed(0) : x.toPrecision(3));

/** One sentence naming what the rule saw at the step where its alert began. */
export function alertMessage(rule: AlertRule, value: number): string {
  const k = rule.k;
  const dir = rule.op === "above" ? "above" : "below";
  switch (rule.kind) {
    case "threshold":
      return `${rule.metric}: mean over the last ${k} steps ${fmt(value)} is ${dir} ${fmt(rule.value)}`;
    case "trend":
      return rule.change === "ratio"
        ? `${rule.metric}: mean over the last ${k} steps is ${fmt(value * 100)} % of its mean over the first ${k} steps (${dir} ${fmt(rule.value * 100)} %)`
        : `${rule.metric}: mean over the last ${k} steps is ${value >= 0 ? "+" : ""}${fmt(value)} from its mean over the first ${k} steps (${dir} ${fmt(rule.value)})`;
    case "growth":
      return `${rule.metric}: mean over the last ${k} steps is ${fmt(value)}x that of the ${k} before (above ${fmt(rule.value)}x)`;
    case "drift":
      return `advantage distribution: Wasserstein-1 distance to the first ${k} steps' is ${fmt(value)} baseline std (mean of the last ${k} steps, ${dir} ${fmt(rule.value)})`;
  }
}

// ---------------------------------------------------------------- API shapes

export const alertSchema = z
  .object({
    id: z.number().int(),
    runId: z.string(),
    runName: z.string(),
    ruleId: z.string(),
    ruleName: z.string().nullable().describe("The rule's name as configured now (null: the rule no longer exists)."),
    metric: z.string(),
    step: z.number().int().describe("The step at which the rule's condition began to hold."),
    lastStep: z.number().int().describe("The last evaluated step at which it held."),
    open: z.boolean().describe("The condition still held at the last evaluated step."),
    value: z.number().describe("What the rule compared at `step`."),
    message: z.string(),
    createdAt: z.number().describe("epoch seconds"),
    webhookState: z.enum(["none", "pending", "sent", "failed"]),
  })
  .meta({ id: "Alert" });
export type Alert = z.output<typeof alertSchema>;

export const alertListSchema = z.object({ alerts: z.array(alertSchema) }).meta({ id: "AlertList" });
export type AlertList = z.output<typeof alertListSchema>;

export const alertListQuerySchema = z
  .object({
    runId: z.string().min(1).max(64).optional(),
    limit: queryInt(1, 200).default(50),
  })
  .strict();
