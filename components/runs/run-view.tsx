"use client";
// The run page: status, progress, actions, live log, config and every metric as a live chart,
// with smoothing, x-axis choice and log scale (in the URL), grouped by metric namespace.
import Link from "next/link";
import { Fragment, useEffect, useMemo, useRef } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { callRoute, routeHref } from "@/lib/client/api";
import { metricKeysQuery, routes, runQuery } from "@/lib/queries";
import { envStepKey } from "@/lib/charts/prepare-series";
import { byNamespace } from "@/lib/charts/namespaces";
import { nothingToDraw, prefetchedKeys } from "@/components/charts/run-chart-plan";
import { StatusBadge } from "@/components/ui/status-badge";
import { ProgressBar } from "@/components/ui/progress-bar";
import { MetricChart } from "@/components/charts/metric-chart";
import { ChartControls, useChartView } from "@/components/charts/chart-controls";
import { btnCls, cardCls } from "@/components/ui/controls";
import { CheckpointEvalPanel } from "./checkpoint-eval-panel";
import { JobLog } from "./job-log";
import { RunTabs } from "./run-tabs";
import { RunAlerts } from "@/components/alerts/run-alerts";
import { FailureClustersPanel } from "@/components/alerts/failure-clusters-panel";
import { TrainerPanel } from "./trainer-panel";
import { LabelStepsPanel } from "./label-steps-panel";

type Run = NonNullable<ReturnType<typeof useRunPage>["run"]>;
type Action = ReturnType<typeof useRunPage>["action"];

/** The run page's state: the run (polled while live), its metric keys, the chart view, and the actions. */
function useRunPage(runId: string) {
  const qc = useQueryClient();
  const { data: run, error } = useQuery(runQuery(runId));
  const live = run?.status === "queued" || run?.status === "running";
  // When the run finishes, fetch once more what stopped polling (metric keys, last points, steps).
  const wasLive = useRef(live);
  useEffect(() => {
    if (wasLive.current && !live) qc.invalidateQueries({ queryKey: ["run", runId] });
    wasLive.current = live;
  }, [live, qc, runId]);
  const action = useMutation({
    mutationFn: (what: "cancel" | "retry") => callRoute(what === "cancel" ? routes.runCancel : routes.runRetry, { params: { id: runId }, body: {} }),
    onSettled: () => qc.invalidateQueries({ queryKey: ["run", runId] }),
  });
  return { run, error, live, action };
}

export function RunView({ runId }: { runId: string }) {
  const { run, error, live, action } = useRunPage(runId);
  if (error)
    return (
      <p className="text-red-600">
        Could not load run {runId}: {error.message}
      </p>
    );
  if (!run) return <p className="text-zinc-500">Loading…</p>;
  return (
    <div className="space-y-5">
      <RunHeader run={run} live={live} action={action} />
      <RunTabs runId={runId} active="overview" />
      {action.error ? <p className="text-sm text-red-600">{action.error.message}</p> : null}
      <RunProgress run={run} />
      <RunAlerts runId={runId} />
      {run.jobKind === "trainer" ? <TrainerPanel config={run.config} /> : null}
      <RunMetrics runId={runId} status={run.status} live={live} />
      <FailureClustersPanel runId={runId} />
      <LabelStepsPanel runId={runId} />
      <div className="grid gap-4 lg:grid-cols-2">
        <section>
          <h2 className="mb-2 font-medium">Log</h2>
          {run.jobId ? <JobLog jobId={run.jobId} live={live} /> : <p className="text-sm text-zinc-500">Imported run: no job log.</p>}
        </section>
        <RunConfig config={run.config} />
      </div>
    </div>
  );
}

function RunHeader({ run, live, action }: { run: Run; live: boolean; action: Action }) {
  return (
    <div className="flex flex-wrap items-start gap-4">
      <div className="min-w-0 flex-1">
        <div className="text-xs text-zinc-500">
          <Link href="/runs" className="hover:underline">
            Runs
          </Link>{" "}
          / {run.project}
        </div>
        <h1 className="truncate text-xl font-semibold tracking-tight" data-testid="run-name">
          {run.name}
        </h1>
        <div className="mt-1 flex flex-wrap items-center gap-2 text-sm text-zinc-500">
          <StatusBadge status={run.status} />
          <span>{run.jobKind ?? run.kind}</span>
          {run.envId ? <span className="font-mono text-xs">{run.envId}</span> : null}
          {run.estimator ? <span className="rounded bg-zinc-100 px-1.5 font-mono text-xs dark:bg-zinc-800">{run.estimator}</span> : null}
          {run.tags.map((t) => (
            <span key={t} className="rounded bg-zinc-100 px-1.5 text-xs dark:bg-zinc-800">
              {t}
            </span>
          ))}
          {run.parentRunId ? (
            <Link href={`/runs/${run.parentRunId}`} className="text-xs text-indigo-600 hover:underline dark:text-indigo-400">
              {run.jobKind === "checkpoint-eval" || run.jobKind === "onnx-eval" ? "evaluates a training run" : "cloned from a run"}
            </Link>
          ) : null}
        </div>
      </div>
      <div className="relative flex gap-2">
        <Link href={`/runs/new?from=${run.id}`} className={btnCls}>
          Clone and edit
        </Link>
        {run.jobKind === "train" ? <CheckpointEvalPanel run={run} /> : null}
        {live && run.jobId ? (
          <button type="button" className={btnCls} onClick={() => action.mutate("cancel")} disabled={action.isPending}>
            Cancel
          </button>
        ) : null}
        {(run.status === "failed" || run.status === "canceled") && run.jobId ? (
          <button type="button" className={btnCls} onClick={() => action.mutate("retry")} disabled={action.isPending}>
            Retry
          </button>
        ) : null}
      </div>
    </div>
  );
}

function RunProgress({ run }: { run: Run }) {
  return (
    <section className={`${cardCls} p-4`}>
      <ProgressBar value={run.progress} label="run progress" />
      <p className="mt-1 text-sm text-zinc-500" data-testid="progress-message">
        {run.progressMessage || (run.status === "queued" ? "waiting for a worker…" : "")}
      </p>
      {run.error ? <p className="mt-2 whitespace-pre-wrap rounded bg-red-50 p-2 text-sm text-red-800 dark:bg-red-950 dark:text-red-300">{run.error}</p> : null}
    </section>
  );
}

/** Every metric as a live chart, grouped by namespace; keys with nothing to draw in this view as one line. */
function RunMetrics({ runId, status, live }: { runId: string; status: string; live: boolean }) {
  const { data: keys } = useQuery(metricKeysQuery(runId, status));
  const view = useChartView();
  const keyNames = useMemo(() => keys?.keys.map((k) => k.key) ?? [], [keys]);
  const envKey = envStepKey(keyNames);
  const groups = useMemo(() => byNamespace(keyNames), [keyNames]);
  // the charts whose points came with the page (app/runs/[id]/page.tsx picks the same ones)
  const prefetched = useMemo(() => new Set(prefetchedKeys(keys?.keys ?? [])), [keys]);
  // keys with nothing to draw in this view (log scale, env-step axis): one compact line, not an empty panel
  const empty = useMemo(() => {
    const byKey = new Map((keys?.keys ?? []).map((k) => [k.key, k]));
    const env = envKey ? (byKey.get(envKey) ?? null) : null;
    const out = new Map<string, string>();
    for (const k of byKey.values()) {
      const why = nothingToDraw(k, { x: view.x, log: view.log }, env);
      if (why) out.set(k.key, why);
    }
    return out;
  }, [keys, envKey, view.x, view.log]);
  return (
    <section className="space-y-3" aria-labelledby="metrics-heading">
      <div className="flex flex-wrap items-center justify-between gap-3">
        <h2 id="metrics-heading" className="font-medium">
          Metrics {keys ? <span className="text-sm font-normal text-zinc-500">({keys.keys.length})</span> : null}
        </h2>
        {keys?.keys.length ? <ExportLinks runId={runId} /> : null}
      </div>
      {keys?.keys.length ? <ChartControls envKey={envKey} /> : null}
      {keys && keys.keys.length === 0 ? <p className="text-sm text-zinc-500">No metrics stored yet.</p> : null}
      {groups.map(([ns, ks]) => {
        const drawn = ks.filter((k) => !empty.has(k));
        const none = ks.filter((k) => empty.has(k));
        return (
          <div key={ns}>
            {groups.length > 1 ? <h3 className="mb-1.5 text-xs font-medium uppercase tracking-wide text-zinc-500">{ns}</h3> : null}
            {drawn.length ? (
              <div className="grid gap-3 sm:grid-cols-2 xl:grid-cols-3">
                {drawn.map((k) => (
                  <MetricChart key={k} runId={runId} metricKey={k} live={live} view={view} envKey={envKey} eager={prefetched.has(k) && view.x !== "env"} />
                ))}
              </div>
            ) : null}
            {none.length ? (
              <p className={`text-xs text-zinc-500 ${drawn.length ? "mt-1.5" : ""}`} data-testid={`no-points-${ns}`}>
                No points to draw here:{" "}
                {none.map((k, i) => (
                  <Fragment key={k}>
                    {i ? "; " : ""}
                    <span data-testid={`no-points-key-${k}`}>
                      <span className="font-mono">{k}</span> ({empty.get(k)})
                    </span>
                  </Fragment>
                ))}
              </p>
            ) : null}
          </div>
        );
      })}
    </section>
  );
}

function ExportLinks({ runId }: { runId: string }) {
  const link = "text-indigo-600 hover:underline dark:text-indigo-400";
  return (
    <p className="text-xs text-zinc-500">
      Full resolution, no sampling:{" "}
      <a className={link} href={routeHref(routes.metricsExport, { params: { id: runId }, query: { format: "csv" } })}>
        CSV
      </a>{" "}
      ·{" "}
      <a className={link} href={routeHref(routes.metricsExport, { params: { id: runId }, query: { format: "json" } })}>
        JSON
      </a>
    </p>
  );
}

function RunConfig({ config }: { config: unknown }) {
  return (
    <section>
      <h2 className="mb-2 font-medium">Config</h2>
      {/* biome-ignore lint/a11y/useSemanticElements: a region, so that its label is read; the box keeps its own element for its formatting */}
      <pre
        className="h-64 overflow-auto rounded-md border border-zinc-200 bg-white p-3 font-mono text-xs dark:border-zinc-800 dark:bg-zinc-900"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable box takes focus so that it can be scrolled from the keyboard
        tabIndex={0}
        role="region"
        aria-label="Run config"
      >
        {JSON.stringify(config, null, 2)}
      </pre>
    </section>
  );
}
