"use client";
// One metric of one run, drawn from stored (downsampled) points only; live while the run runs.
// Smoothing, x-axis and log scale come from the page's chart view; the raw line stays visible
// (faint) under the smoothed one, so smoothing never hides what was measured.
import { lazy, Suspense, useEffect, useMemo, useState } from "react";
import { useRouter } from "next/navigation";
import { CHART_POINTS, chartScales, prepareSeries } from "@/lib/charts/prepare-series";
import { fmt, tickFormat } from "@/lib/charts/format";
import { useInView } from "@/components/ui/use-in-view";
import { useLiveSeries } from "./use-live-series";
import { StaticLineChart, type StaticLine } from "./static-line-chart";
import { X_LABEL, xTick } from "./axis-format";
import type { ChartView } from "./chart-controls";

// Recharts (~370 kB of script) loads only when the first chart turns interactive.
const InteractiveChart = lazy(() => import("./interactive-line-chart"));

// Swap static first paints for interactive charts one per idle period, so the page never blocks.
const upgrades: (() => void)[] = [];
let draining = false;
const idle = (fn: () => void) => (typeof requestIdleCallback === "function" ? requestIdleCallback(fn, { timeout: 1500 }) : setTimeout(fn, 16));
function drain() {
  upgrades.shift()?.();
  if (upgrades.length) idle(drain);
  else draining = false;
}
/** Start upgrading only after the page has loaded and painted, so the first draw never waits for Recharts. */
function afterLoad(fn: () => void) {
  if (document.readyState === "complete") setTimeout(fn, 500);
  else window.addEventListener("load", () => setTimeout(fn, 500), { once: true });
}
/** Queue an upgrade from a static first paint to Recharts (one per idle period, after load); returns its cancel. */
export function whenIdle(fn: () => void): () => void {
  upgrades.push(fn);
  if (!draining) {
    draining = true;
    afterLoad(() => idle(drain));
  }
  return () => {
    const i = upgrades.indexOf(fn);
    if (i >= 0) upgrades.splice(i, 1);
  };
}

/**
 * `eager`: draw at once (also on the server) — the page prefetched this chart's points. Otherwise
 * the chart mounts when it comes near the viewport, or, for a finished run, in the background one
 * per idle period after the page has loaded: a page left unscrolled (a full-page screenshot, a
 * print) still ends with every chart drawn, never with placeholder panels. (A live run's charts
 * poll while mounted, so those wait to be scrolled to.) Once mounted, a chart stays mounted.
 */
export function MetricChart({
  eager = false,
  ...props
}: {
  runId: string;
  metricKey: string;
  live: boolean;
  view?: ChartView;
  envKey?: string | null;
  eager?: boolean;
}) {
  const [ref, seen] = useInView<HTMLElement>();
  const [mounted, setMounted] = useState(eager);
  if ((eager || seen) && !mounted) setMounted(true);
  useEffect(() => (mounted || props.live ? undefined : whenIdle(() => setMounted(true))), [mounted, props.live]);
  return (
    <figure ref={ref} className="rounded-lg border border-zinc-200 bg-white p-3 dark:border-zinc-800 dark:bg-zinc-900" data-testid={`chart-${props.metricKey}`}>
      {mounted ? <ChartBody {...props} /> : <ChartSkeleton metricKey={props.metricKey} />}
    </figure>
  );
}

function ChartSkeleton({ metricKey }: { metricKey: string }) {
  return (
    <>
      <figcaption className="mb-1 flex items-baseline justify-between gap-2 text-sm">
        <span className="truncate font-medium">{metricKey}</span>
        <span className="shrink-0 text-zinc-500">loading…</span>
      </figcaption>
      <div className="h-44 animate-pulse rounded bg-zinc-100 dark:bg-zinc-800/50" data-testid="chart-skeleton" />
    </>
  );
}

function ChartBody({
  runId,
  metricKey,
  live,
  view = { x: "step", smoothing: 0, log: false },
  envKey = null,
}: {
  runId: string;
  metricKey: string;
  live: boolean;
  view?: ChartView;
  envKey?: string | null;
}) {
  const router = useRouter();
  const { data, error } = useLiveSeries(runId, metricKey, live, CHART_POINTS);
  const wantEnv = view.x === "env" && !!envKey;
  const env = useLiveSeries(runId, envKey ?? "", live && wantEnv, CHART_POINTS, wantEnv);
  const prepared = useMemo(
    // (against env steps, nothing until the env-step series is here: not "no points" while it loads)
    () =>
      data && (!wantEnv || env.data)
        ? prepareSeries(data, { x: view.x, smoothing: view.smoothing, log: view.log, envSteps: wantEnv ? env.data : undefined })
        : null,
    [data, env.data, view.x, view.smoothing, view.log, wantEnv],
  );
  const points = prepared?.points ?? [];
  const last = data?.steps.length ? { step: data.steps[data.steps.length - 1], value: data.values[data.values.length - 1] } : null;
  const smooth = view.smoothing > 0;
  const scales = useMemo(() => chartScales(points, { log: view.log, x: view.x }), [points, view.log, view.x]);
  const [interactive, setInteractive] = useState(false);
  useEffect(() => (interactive ? undefined : whenIdle(() => setInteractive(true))), [interactive]);
  const lines: StaticLine[] = [{ key: "y", color: "#6366f1", opacity: smooth ? 0.28 : 1, width: 1.5 }];
  if (smooth) lines.push({ key: "ySmooth", color: "#4f46e5", opacity: 1, width: 1.8 });
  const staticChart = scales ? (
    <StaticLineChart
      points={points}
      scales={scales}
      lines={lines}
      log={view.log}
      xFormat={xTick(view.x, scales.x.ticks)}
      yFormat={view.log ? fmt : tickFormat(scales.y.ticks)}
      dots={!smooth && points.length < 40}
    />
  ) : null;
  return (
    <>
      <figcaption className="mb-1 flex items-baseline justify-between gap-2 text-sm">
        <span className="truncate font-medium" title={metricKey}>
          {metricKey}
        </span>
        <span className="shrink-0 tabular-nums text-zinc-500">
          {last ? (
            <>
              last {fmt(last.value)} @ {last.step}
            </>
          ) : data ? (
            live ? (
              "no points yet"
            ) : (
              "no points"
            )
          ) : (
            "loading…"
          )}
          {data && data.stride > 1 ? <span title="min/max buckets of this many steps"> · stride {data.stride}</span> : null}
        </span>
      </figcaption>
      {error ? <p className="text-sm text-red-600">{String(error)}</p> : null}
      {prepared && !scales ? (
        // nothing to draw (no finite point, or none left in this view): say so, no empty plot area
        <p className="text-xs text-zinc-500" data-testid="no-points">
          no points to draw{data?.steps.length ? " in this view" : data?.nonFinite.length ? " (no finite value)" : ""}
        </p>
      ) : (
        // biome-ignore lint/a11y/noStaticElementInteractions: not a control: the first pointer or focus inside swaps the static chart for the interactive one
        <div className="h-44" onPointerEnter={() => setInteractive(true)} onFocus={() => setInteractive(true)}>
          {!scales ? null : interactive ? (
            <Suspense fallback={staticChart}>
              <InteractiveChart
                points={points}
                scales={scales}
                lines={lines}
                view={view}
                onStep={(step) => router.push(`/search?runs=${runId}&step=${step}`)}
              />
            </Suspense>
          ) : (
            staticChart
          )}
        </div>
      )}
      {data?.nonFinite.length ? (
        <p className="mt-1 text-xs text-red-700 dark:text-red-400" data-testid="non-finite">
          {data.nonFinite.length} non-finite value{data.nonFinite.length === 1 ? "" : "s"} not drawn:{" "}
          {data.nonFinite
            .slice(0, 4)
            .map((p) => `${p.value} @ ${p.step}`)
            .join(", ")}
          {data.nonFinite.length > 4 ? ", …" : ""}
        </p>
      ) : null}
      {prepared && (prepared.hiddenNonPositive > 0 || (view.x !== "step" && prepared.droppedNoX > 0)) ? (
        <p className="mt-1 text-xs text-amber-700 dark:text-amber-400">
          {prepared.hiddenNonPositive > 0 ? `${prepared.hiddenNonPositive} values ≤ 0 hidden on the log scale. ` : ""}
          {view.x !== "step" && prepared.droppedNoX > 0 ? `${prepared.droppedNoX} points without ${X_LABEL[view.x]} not drawn.` : ""}
        </p>
      ) : null}
    </>
  );
}
