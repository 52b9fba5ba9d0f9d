"use client";
// Compare runs: every metric the runs log, overlaid per run, or grouped by a config key with the
// group mean and a band (min-max, std or standard error) over its runs; and a config diff table.
// Charts sit in the run page's namespace sections; each has a legend (colour, name, last value),
// and hovering a line or a legend entry highlights that run or group in every chart.
// Runs, grouping, band, smoothing, x-axis and log scale are in the URL.
import Link from "next/link";
import { createContext, useContext, useEffect, useMemo, useState } from "react";
import { useQueries, useQuery } from "@tanstack/react-query";
import { Area, CartesianGrid, ComposedChart, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { compareQuery, seriesQuery } from "@/lib/queries";
import {
  aggregate,
  commonGrid,
  configDiff,
  flattenConfig,
  groupRuns,
  RUN_GROUP_FIELDS,
  SWEEP_GROUP,
  type BandKind,
  type RunGroup,
  type XYSeries,
} from "@/lib/charts/prepare-compare";
import { CHART_POINTS, chartScales, envStepKey, prepareSeries, type ChartPoint } from "@/lib/charts/prepare-series";
import { StaticLineChart, type StaticOverlay } from "@/components/charts/static-line-chart";
import { whenIdle } from "@/components/charts/metric-chart";
import { colorAt } from "@/lib/charts/palette";
import { niceScale } from "@/lib/charts/domain";
import { fmt } from "@/lib/charts/format";
import { byNamespace, lastValue } from "@/lib/charts/namespaces";
import type { RunOut } from "@/lib/schemas/runs";
import type { Series } from "@/lib/schemas/metrics";
import { ChartControls, useChartView, type ChartView } from "@/components/charts/chart-controls";
import { xTick, xValue } from "@/components/charts/axis-format";
import { useInView } from "@/components/ui/use-in-view";
import { useUrlState } from "@/components/ui/use-url-state";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { StatusBadge } from "@/components/ui/status-badge";
import { GroupDifferencePanel } from "./group-difference-panel";
import { SweepProgress } from "./sweep-progress";

/** The line under the pointer (a run id, or a group's mean `m<i>`), highlighted in every chart. */
const HoverCtx = createContext<{ hover: string | null; setHover: (k: string | null) => void }>({ hover: null, setHover: () => {} });

/** The page's state, all of it in the URL but the hovered line: runs, grouping, band, chart view. */
function useCompare() {
  const { get, set } = useUrlState();
  const ids = useMemo(() => (get("runs") ?? "").split(",").filter(Boolean), [get]);
  const { data, error } = useQuery(compareQuery(ids));
  const view = useChartView();
  const groupKey = get("group") || null;
  const band = (["minmax", "std", "stderr"].includes(get("band") ?? "") ? get("band") : "minmax") as BandKind;
  const runs = data?.runs ?? [];
  const groups = useMemo(() => groupRuns(runs, groupKey), [runs, groupKey]);
  const groupOptions = useMemo(() => {
    const cfg = new Set<string>();
    for (const r of runs) for (const k of Object.keys(flattenConfig(r.config))) cfg.add(`config.${k}`);
    // a sweep's runs group by their grid point (every varied param but the seed)
    const sweep = runs.some((r) => r.sweepParams) ? [SWEEP_GROUP] : [];
    return [...sweep, ...RUN_GROUP_FIELDS, ...[...cfg].sort()];
  }, [runs]);
  const keys = data?.keys ?? [];
  const envKey = envStepKey(keys.map((k) => k.key));
  // grouped: a run wears its group's colour (the colour of the mean line it contributes to)
  const colorOfRun = (id: string) => colorAt(Math.max(0, groupKey ? groups.findIndex((g) => g.runIds.includes(id)) : ids.indexOf(id)));
  const sweepId = get("sweep") || null;
  return { set, ids, error, view, groupKey, band, runs, groups, groupOptions, keys, envKey, colorOfRun, sweepId };
}
type CompareState = ReturnType<typeof useCompare>;

export function CompareView() {
  const st = useCompare();
  const { ids, error, runs, colorOfRun } = st;
  if (ids.length === 0)
    return (
      <div className="space-y-3">
        <h1 className="text-xl font-semibold tracking-tight">Compare runs</h1>
        <p className="text-sm text-zinc-500">
          No runs selected. Tick runs in the{" "}
          <Link href="/runs" className="text-indigo-600 hover:underline">
            runs table
          </Link>{" "}
          and press Compare: every metric they log is overlaid, run by run or grouped by a config key (mean and band), with a config diff.
        </p>
      </div>
    );
  return (
    <div className="space-y-4">
      <div className="text-xs text-zinc-500">
        <Link href="/runs" className="hover:underline">
          Runs
        </Link>{" "}
        / compare
      </div>
      <h1 className="text-xl font-semibold tracking-tight">Compare {ids.length} runs</h1>
      {ids.length === 2 ? (
        <Link
          href={`/compare/tasks?a=${ids[0]}&b=${ids[1]}`}
          className="text-sm text-indigo-600 hover:underline dark:text-indigo-400"
          data-testid="compare-tasks-link"
        >
          Which tasks does the second newly solve or fail? →
        </Link>
      ) : null}
      {error ? (
        <p className="text-sm text-red-600" role="alert">
          {error.message}
        </p>
      ) : null}
      {st.sweepId ? <SweepProgress id={st.sweepId} /> : null}
      <RunChips st={st} />
      <CompareControls st={st} />
      {st.groupKey ? <GroupDifferencePanel groups={st.groups} runs={runs} keys={st.keys.map((k) => k.key)} /> : null}
      <CompareSections st={st} />
      {runs.length ? <ConfigDiff runs={runs} colorOfRun={colorOfRun} /> : null}
    </div>
  );
}

/** The compared runs, each with its colour and a button that drops it from the comparison. */
function RunChips({ st }: { st: CompareState }) {
  const { ids, runs, set, colorOfRun } = st;
  return (
    <ul className="flex flex-wrap gap-2" aria-label="Compared runs">
      {runs.map((r) => (
        <li
          key={r.id}
          className="flex items-center gap-1.5 rounded-full border border-zinc-200 bg-white py-0.5 pl-2 pr-1 text-sm dark:border-zinc-800 dark:bg-zinc-900"
        >
          <span className="size-2.5 rounded-full" style={{ background: colorOfRun(r.id) }} aria-hidden />
          <Link href={`/runs/${r.id}`} className="hover:underline">
            {r.name}
          </Link>
          <StatusBadge status={r.status} />
          <button
            type="button"
            className="rounded-full px-1 text-zinc-500 hover:bg-zinc-100 dark:hover:bg-zinc-800"
            aria-label={`Remove ${r.name}`}
            onClick={() => set({ runs: ids.filter((x) => x !== r.id).join(",") || undefined })}
          >
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Group by, band, the chart view's controls, and the groups with their run counts. */
function CompareControls({ st }: { st: CompareState }) {
  const { set, groupKey, band, groups, groupOptions, envKey } = st;
  return (
    <div className={`${cardCls} space-y-3 p-3`}>
      <div className="flex flex-wrap items-center gap-x-5 gap-y-2 text-sm">
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">Group by</span>
          <select className={inputCls} value={groupKey ?? ""} onChange={(e) => set({ group: e.target.value || undefined })} aria-label="Group by">
            <option value="">none (one line per run)</option>
            {groupOptions.map((k) => (
              <option key={k} value={k}>
                {k === SWEEP_GROUP ? "sweep (grid point)" : k}
              </option>
            ))}
          </select>
        </label>
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">Band</span>
          <select
            className={inputCls}
            value={band}
            disabled={!groupKey}
            onChange={(e) => set({ band: e.target.value === "minmax" ? undefined : e.target.value })}
            aria-label="Band"
          >
            <option value="minmax">min – max</option>
            <option value="std">± std</option>
            <option value="stderr">± standard error</option>
          </select>
        </label>
      </div>
      <ChartControls envKey={envKey} />
      {groupKey ? (
        <ul className="flex flex-wrap gap-3 text-sm" aria-label="Groups" data-testid="compare-groups">
          {groups.map((g, i) => (
            <li key={g.value} className="flex items-center gap-1.5" data-testid="compare-group">
              <span className="h-2.5 w-5 rounded-sm" style={{ background: colorAt(i) }} aria-hidden />
              {g.label}{" "}
              <span className="text-zinc-500">
                ({g.runIds.length} run{g.runIds.length === 1 ? "" : "s"})
              </span>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** The charts in the run page's namespace sections and order (lib/charts/namespaces.ts). */
function CompareSections({ st }: { st: CompareState }) {
  const [hover, setHover] = useState<string | null>(null);
  const hoverCtx = useMemo(() => ({ hover, setHover }), [hover]);
  const { keys, runs, groupKey, groups, band, view, envKey, colorOfRun } = st;
  const sections = useMemo(() => byNamespace(keys.map((k) => k.key)), [keys]);
  return (
    <HoverCtx.Provider value={hoverCtx}>
      {sections.map(([ns, ks]) => (
        <section key={ns} aria-label={`${ns} metrics`} data-testid={`compare-section-${ns}`}>
          {sections.length > 1 ? <h2 className="mb-1.5 text-xs font-medium uppercase tracking-wide text-zinc-500">{ns}</h2> : null}
          <div className="grid gap-3 md:grid-cols-2 xl:grid-cols-3">
            {ks.map((k) => (
              <CompareChart
                key={k}
                eager={keys.findIndex((x) => x.key === k) < EAGER_CHARTS}
                metricKey={k}
                runs={runs}
                groups={groupKey ? groups : null}
                band={band}
                view={view}
                envKey={envKey}
                colorOfRun={colorOfRun}
              />
            ))}
          </div>
        </section>
      ))}
    </HoverCtx.Provider>
  );
}

/** Charts drawn at once, in the server's HTML too (their series come with the page); the rest when scrolled to. */
const EAGER_CHARTS = 24;

function CompareChart({
  eager,
  ...props
}: {
  eager: boolean;
  metricKey: string;
  runs: RunOut[];
  groups: RunGroup[] | null;
  band: BandKind;
  view: ChartView;
  envKey: string | null;
  colorOfRun: (id: string) => string;
}) {
  const [ref, seen] = useInView<HTMLElement>();
  return (
    <figure ref={ref} className={`${cardCls} p-3`} data-testid={`compare-chart-${props.metricKey}`}>
      <figcaption className="mb-1 truncate text-sm font-medium" title={props.metricKey}>
        {props.metricKey}
      </figcaption>
      {seen || eager ? <CompareBody {...props} /> : <div className="h-64 animate-pulse rounded bg-zinc-100 dark:bg-zinc-800/50" />}
    </figure>
  );
}

type CompareBodyProps = {
  metricKey: string;
  runs: RunOut[];
  groups: RunGroup[] | null;
  band: BandKind;
  view: ChartView;
  envKey: string | null;
  colorOfRun: (id: string) => string;
};
type CompareLine = { key: string; color: string; name: string; band?: string };

/**
 * One chart's rows on a common x grid: a line per run, or per group its mean and band; and the
 * y scale over them. Null while a run's series is loading.
 */
function useCompareLines({ metricKey, runs, groups, band, view, envKey, colorOfRun }: CompareBodyProps) {
  // as many points as a run page chart (the server prefetches these into the page: app/compare/page.tsx)
  const series = useQueries({ queries: runs.map((r) => seriesQuery(r.id, metricKey, CHART_POINTS)) });
  const wantEnv = view.x === "env" && !!envKey;
  const env = useQueries({ queries: runs.map((r) => ({ ...seriesQuery(r.id, envKey ?? "", CHART_POINTS), enabled: wantEnv })) });
  const loaded = series.every((s) => s.data);
  // biome-ignore lint/correctness/useExhaustiveDependencies: series and env are compared by their update times (useQueries returns new arrays each render); colorOfRun is rebuilt each render from the runs and groups listed
  const { rows, lines } = useMemo(() => {
    if (!loaded) return { rows: [], lines: [] as CompareLine[] };
    // per run: prepared (x, smoothed-or-raw y) of the stored points
    const xy = new Map<string, XYSeries>();
    runs.forEach((r, i) => {
      const s = series[i].data as Series;
      if (!s || s.count === 0) return;
      const envS = wantEnv ? (env[i].data as Series | undefined) : undefined;
      const p = prepareSeries(s, { x: view.x, smoothing: view.smoothing, log: view.log, envSteps: envS });
      xy.set(r.id, { x: p.points.map((q) => q.x), y: p.points.map((q) => (view.smoothing > 0 ? q.ySmooth : q.y)) });
    });
    const all = [...xy.values()];
    const grid = commonGrid(all, 500);
    const cols: Record<string, (number | null | [number, number])[]> = {};
    const lines: CompareLine[] = [];
    if (groups) {
      groups.forEach((g, i) => {
        const members = g.runIds.map((id) => xy.get(id)).filter((s): s is XYSeries => !!s);
        if (!members.length) return;
        const a = aggregate(members, grid, band);
        cols[`m${i}`] = a.mean;
        cols[`b${i}`] = a.lo.map((lo, j) => (lo === null || a.hi[j] === null ? null : ([lo, a.hi[j]!] as [number, number])));
        lines.push({ key: `m${i}`, band: `b${i}`, color: colorAt(i), name: `${g.label} (n=${members.length})` });
      });
    } else {
      runs.forEach((r) => {
        const s = xy.get(r.id);
        if (!s) return;
        cols[r.id] = aggregate([s], grid, "minmax").mean;
        lines.push({ key: r.id, color: colorOfRun(r.id), name: r.name });
      });
    }
    const rows = grid.map((x, j) => {
      const row: Record<string, unknown> = { x };
      for (const [k, v] of Object.entries(cols)) row[k] = v[j];
      return row;
    });
    return { rows, lines };
    // the series results are compared by their update times (useQueries returns new arrays each render)
  }, [
    loaded,
    series.map((s) => s.dataUpdatedAt).join(),
    env.map((s) => s.dataUpdatedAt).join(),
    runs,
    groups,
    band,
    view.x,
    view.smoothing,
    view.log,
    wantEnv,
  ]);
  const yScale = useMemo(() => {
    if (view.log) return null;
    const vals: (number | null)[] = [];
    for (const r of rows)
      for (const l of lines) {
        vals.push(r[l.key] as number | null);
        const b = l.band ? (r[l.band] as [number, number] | null) : null;
        if (b) vals.push(b[0], b[1]);
      }
    return niceScale(vals);
  }, [rows, lines, view.log]);
  return loaded ? { rows, lines, yScale } : null;
}

function CompareBody(props: CompareBodyProps) {
  const data = useCompareLines(props);
  if (!data) return <div className="h-64 animate-pulse rounded bg-zinc-100 dark:bg-zinc-800/50" />;
  if (!data.lines.length)
    return (
      <p className="py-10 text-center text-sm text-zinc-500">none of the runs logs this metric{props.view.x === "env" ? " with an env-step counter" : ""}</p>
    );
  return <CompareLinesChart metricKey={props.metricKey} view={props.view} {...data} />;
}

type Rows = Record<string, unknown>[];

/**
 * First paint: the same lines as SVG (lib-free, as on the run page), swapped for the Recharts chart
 * (tooltip, bands) on pointer or focus, or when the browser is idle.
 */
function CompareLinesChart({
  metricKey,
  view,
  rows,
  lines,
  yScale,
}: {
  metricKey: string;
  view: ChartView;
  rows: Rows;
  lines: CompareLine[];
  yScale: ReturnType<typeof niceScale>;
}) {
  const { hover, setHover } = useContext(HoverCtx);
  const [interactive, setInteractive] = useState(false);
  useEffect(() => (interactive ? undefined : whenIdle(() => setInteractive(true))), [interactive]);
  const staticLines = useMemo(() => {
    const per = lines.map((l) => ({
      l,
      points: rows.map((r): ChartPoint => ({ x: r.x as number, step: r.x as number, y: (r[l.key] as number | null) ?? null, ySmooth: null })),
    }));
    const s = chartScales(
      per.flatMap((p) => p.points),
      { log: view.log, x: view.x },
    );
    return { per, scales: s && yScale ? { x: s.x, y: yScale } : s };
  }, [rows, lines, yScale, view.log, view.x]);
  const overlays: StaticOverlay[] = staticLines.per.map(({ l, points }) => ({
    id: l.key,
    points,
    color: l.color,
    opacity: hover && hover !== l.key ? 0.2 : 1,
    width: hover === l.key ? 3 : 1.7,
  }));
  return (
    <div>
      {/* biome-ignore lint/a11y/noStaticElementInteractions: not a control: the first pointer or focus inside swaps the static chart for the interactive one */}
      <div className="h-52" onPointerEnter={() => setInteractive(true)} onFocus={() => setInteractive(true)}>
        {!interactive && staticLines.scales ? (
          <StaticLineChart
            points={[]}
            overlays={overlays}
            scales={staticLines.scales}
            lines={[]}
            log={view.log}
            xFormat={xTick(view.x, staticLines.scales.x.ticks)}
            yFormat={fmt}
          />
        ) : (
          <ResponsiveContainer width="100%" height="100%">
            <ComposedChart data={rows} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
              <CartesianGrid strokeDasharray="3 3" stroke="currentColor" strokeOpacity={0.12} />
              <XAxis
                dataKey="x"
                type="number"
                domain={staticLines.scales?.x.domain ?? ["dataMin", "dataMax"]}
                ticks={staticLines.scales?.x.ticks}
                interval={0}
                allowDecimals={view.x !== "step"}
                tick={{ fontSize: 11 }}
                tickFormatter={xTick(view.x, staticLines.scales?.x.ticks ?? [])}
                stroke="currentColor"
                strokeOpacity={0.5}
              />
              <YAxis
                tick={{ fontSize: 11 }}
                width={44}
                tickFormatter={fmt}
                stroke="currentColor"
                strokeOpacity={0.5}
                scale={view.log ? "log" : "auto"}
                domain={view.log ? ["dataMin", "dataMax"] : (yScale?.domain ?? ["auto", "auto"])}
                ticks={yScale?.ticks}
                allowDataOverflow={view.log}
              />
              <Tooltip
                contentStyle={{ fontSize: 12 }}
                labelFormatter={(x) => `${view.x === "step" ? "step" : view.x === "env" ? "env steps" : "time"} ${xValue(view.x)(Number(x))}`}
                formatter={(v, name) => (Array.isArray(v) ? [`${fmt(v[0])} – ${fmt(v[1])}`, `${name} band`] : [fmt(v === null ? null : Number(v)), name])}
              />
              {lines.map((l) =>
                l.band ? (
                  <Area
                    key={l.band}
                    dataKey={l.band}
                    name={l.name}
                    stroke="none"
                    fill={l.color}
                    fillOpacity={0.18}
                    isAnimationActive={false}
                    connectNulls={false}
                    legendType="none"
                  />
                ) : null,
              )}
              {lines.map((l) => (
                <Line
                  key={l.key}
                  dataKey={l.key}
                  name={l.name}
                  stroke={l.color}
                  strokeWidth={hover === l.key ? 3 : 1.7}
                  strokeOpacity={hover && hover !== l.key ? 0.2 : 1}
                  dot={false}
                  isAnimationActive={false}
                  connectNulls={false}
                  onMouseEnter={() => setHover(l.key)}
                  onMouseLeave={() => setHover(null)}
                />
              ))}
            </ComposedChart>
          </ResponsiveContainer>
        )}
      </div>
      <CompareLegend metricKey={metricKey} rows={rows} lines={lines} />
    </div>
  );
}

/** Legend: run or group, colour, last value; hovering an entry highlights its line in every chart. */
function CompareLegend({ metricKey, rows, lines }: { metricKey: string; rows: Rows; lines: CompareLine[] }) {
  const { hover, setHover } = useContext(HoverCtx);
  const legend = useMemo(() => lines.map((l) => ({ ...l, last: lastValue(rows.map((r) => r[l.key])) })), [rows, lines]);
  return (
    <ul className="mt-1.5 space-y-0.5 text-xs" aria-label={`Legend of ${metricKey}`} data-testid="chart-legend">
      {legend.map((l) => (
        <li
          key={l.key}
          className={`flex items-center gap-1.5 rounded px-1 ${hover === l.key ? "bg-zinc-100 dark:bg-zinc-800" : ""} ${hover && hover !== l.key ? "opacity-50" : ""}`}
          onMouseEnter={() => setHover(l.key)}
          onMouseLeave={() => setHover(null)}
          data-testid="legend-item"
          data-line={l.key}
          data-highlight={hover === l.key || undefined}
        >
          <span className="h-0.5 w-4 shrink-0 rounded" style={{ background: l.color, height: 3 }} aria-hidden />
          <span className="min-w-0 flex-1 truncate" title={l.name}>
            {l.name}
          </span>
          <span className="tabular-nums text-zinc-500" title="last value" data-testid="legend-last">
            {fmt(l.last)}
          </span>
        </li>
      ))}
    </ul>
  );
}

function ConfigDiff({ runs, colorOfRun }: { runs: RunOut[]; colorOfRun: (id: string) => string }) {
  const [all, setAll] = useState(false);
  const rows = useMemo(() => configDiff(runs), [runs]);
  const shown = all ? rows : rows.filter((r) => r.differs);
  return (
    <section className={`${cardCls} p-3`} aria-labelledby="diff-h">
      <div className="mb-2 flex items-center justify-between">
        <h2 id="diff-h" className={labelCls}>
          Config diff ({rows.filter((r) => r.differs).length} of {rows.length} keys differ)
        </h2>
        <label className="flex items-center gap-1.5 text-sm">
          <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} className="accent-indigo-600" /> show equal keys too
        </label>
      </div>
      <div className="overflow-x-auto">
        <table className="w-full text-sm" data-testid="config-diff">
          <thead className="text-left text-xs text-zinc-500">
            <tr>
              <th className="py-1 pr-3 font-medium">key</th>
              {runs.map((r) => (
                <th key={r.id} className="py-1 pr-3 font-medium">
                  <span className="mr-1 inline-block size-2 rounded-full" style={{ background: colorOfRun(r.id) }} aria-hidden />
                  {r.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((row) => (
              <tr key={row.key} className="border-t border-zinc-100 dark:border-zinc-800" data-differs={row.differs}>
                <td className="py-1 pr-3 font-mono text-xs">{row.key}</td>
                {row.values.map((v, i) => (
                  <td
                    key={runs[i].id}
                    className={`max-w-64 truncate py-1 pr-3 font-mono text-xs ${row.differs ? "bg-amber-50 dark:bg-amber-950/40" : "text-zinc-500"}`}
                    title={v}
                  >
                    {v}
                  </td>
                ))}
              </tr>
            ))}
            {shown.length === 0 ? (
              <tr>
                <td colSpan={runs.length + 1} className="py-3 text-zinc-500">
                  The configs are identical.
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
    </section>
  );
}
