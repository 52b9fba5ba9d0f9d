import { z } from "zod";
import { getRun } from "@/lib/db/runs";
import { launchCatalog } from "@/lib/runs/catalog";
import { LaunchForm, type LaunchPrefill } from "@/components/runs/launch-form";
import { estimatorCatalog } from "@/lib/runs/catalog";
import { estimatorSection } from "@/components/runs/launch-estimators";
import type { RunOut } from "@/lib/schemas/runs";

export const dynamic = "force-dynamic";
export const metadata = { title: "Launch run" };

/**
 * A launched run clones as its own job kind with its stored config. An imported run has no job:
 * it clones into the first job kind that takes an estimator (else the first one), carrying over
 * what the form knows (environment, estimator and its params, name, tags).
 */
function prefillOf(run: RunOut, catalog: ReturnType<typeof launchCatalog>, estimators: ReturnType<typeof estimatorCatalog>): LaunchPrefill {
  const base = { name: run.name, tags: run.tags, parentRunId: run.id };
  if (run.jobKind && catalog.jobKinds.some((j) => j.id === run.jobKind))
    return { ...base, jobKind: run.jobKind, config: run.config as Record<string, unknown> };
  const kind = catalog.jobKinds.find((j) => estimatorSection(j.configSchema, estimators)) ?? catalog.jobKinds[0];
  const cfg = (run.config ?? {}) as Record<string, unknown>;
  return {
    ...base,
    jobKind: kind.id,
    config: { envId: run.envId ?? cfg.envId, envConfig: cfg.envConfig, estimator: run.estimator ?? cfg.estimator, estimatorParams: cfg.estimatorParams },
    note: `${run.name} is ${run.kind === "imported" ? "an imported run (trained elsewhere)" : `a ${run.jobKind ?? run.kind} run`}: the draft carries over its environment${kind.configSchema.properties?.estimator ? ", estimator and parameters" : ""}, name and tags; the rest starts from the defaults.`,
  };
}

/** `?from=<runId>` clones a run into an editable draft (ClearML-style "clone and edit"). */
export default async function NewRunPage({ searchParams }: { searchParams: Promise<{ from?: string }> }) {
  const { from } = await searchParams;
  const catalog = launchCatalog();
  const estimators = estimatorCatalog();
  let prefill: LaunchPrefill | undefined;
  if (
    from &&
    z
      .string()
      .regex(/^[\w-]+$/)
      .safeParse(from).success
  ) {
    try {
      prefill = prefillOf(getRun(from), catalog, estimators);
    } catch {
      /* unknown run: start from defaults */
    }
  }
  return (
    <div className="mx-auto max-w-3xl space-y-4">
      <h1 className="text-xl font-semibold tracking-tight">{prefill ? `Clone of ${prefill.name}` : "Launch a run"}</h1>
      {catalog.trainersError ? (
        <p className="rounded-md bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200" data-testid="trainers-error">
          Trainer templates are not offered: {catalog.trainersError}
        </p>
      ) : null}
      <LaunchForm catalog={catalog} estimators={estimators} prefill={prefill} />
    </div>
  );
}
