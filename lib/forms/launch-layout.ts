// How a job kind's launch form is laid out: titled sections in the order a researcher decides
// things, each with its everyday fields and its advanced ones (folded). Fields a layout does not
// name land in a last "Other" section, so a new config field is never hidden by a stale layout.
import type { Field } from "./schema-fields";

export interface SectionLayout {
  title: string;
  /** where the environment or estimator picker goes (they are sections of their own otherwise) */
  slot?: "env" | "estimator";
  basic: string[];
  advanced?: string[];
}

export const LAUNCH_LAYOUTS: Record<string, SectionLayout[]> = {
  train: [
    { title: "Task and environment", slot: "env", basic: ["steps", "seed"], advanced: ["instructions", "restrictToAdmissible"] },
    { title: "Model", basic: ["model"], advanced: ["device", "threads"] },
    { title: "Credit estimator", slot: "estimator", basic: [] },
    {
      title: "Optimisation",
      basic: ["lr", "epochs"],
      advanced: ["minibatchSize", "clipRatio", "clipRatioC", "lrDecayAfter", "klCoef", "klEstimator", "entropyCoef", "lossAggregation", "dropZeroAdvantage"],
    },
    { title: "Rollout", basic: ["groupSize", "groupsPerStep", "context"], advanced: ["temperature", "explorationEpsilon", "maxNewTokens"] },
    { title: "Evaluation", basic: ["evalInterval", "evalEpisodes"], advanced: ["targetSuccess"] },
    { title: "Checkpoints", basic: ["checkpointInterval", "exportOnnx"] },
  ],
};

export interface LaidOutSection {
  title: string;
  slot?: "env" | "estimator";
  basic: Field[];
  advanced: Field[];
}

/** The job's fields in its layout's sections (one "Parameters" section for kinds without a layout). */
export function layOut(jobKind: string, fields: Field[], hasEnv: boolean, hasEstimator: boolean): LaidOutSection[] {
  const byName = new Map(fields.map((f) => [f.name, f]));
  const pick = (names: string[] = []) => names.flatMap((n) => (byName.has(n) ? [byName.get(n)!] : []));
  const layout = LAUNCH_LAYOUTS[jobKind];
  const out: LaidOutSection[] = layout
    ? layout
        .filter((s) => (s.slot === "env" ? hasEnv : s.slot === "estimator" ? hasEstimator : true))
        .map((s) => ({ title: s.title, slot: s.slot, basic: pick(s.basic), advanced: pick(s.advanced) }))
    : [
        ...(hasEnv ? [{ title: "Environment", slot: "env" as const, basic: [], advanced: [] }] : []),
        ...(hasEstimator ? [{ title: "Credit estimator", slot: "estimator" as const, basic: [], advanced: [] }] : []),
      ];
  const named = new Set(out.flatMap((s) => [...s.basic, ...s.advanced].map((f) => f.name)));
  const rest = fields.filter((f) => !named.has(f.name));
  if (rest.length) out.push({ title: layout ? "Other" : "Parameters", basic: rest, advanced: [] });
  return out.filter((s) => s.slot || s.basic.length || s.advanced.length);
}
