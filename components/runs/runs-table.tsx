"use client";
// Runs list: search, filters (project, status, environment, estimator, tag, config values) and sort live in
// the URL (shareable). Server-side pages of 100 fetched as they scroll into view; only the visible
// rows are in the DOM, so 10^4 runs stay fast. Tick runs and press Compare. Metric columns are
// chosen from every logged key; a header shows the key's namespace above its name (full key on
// hover), and every column's width is dragged from its header's right edge.
import Link from "next/link";
import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { useQueries, useQuery } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import { runFiltersQuery, runListParams, runsPageQuery, RUNS_PAGE_SIZE } from "@/lib/queries";
import { fmt } from "@/lib/charts/format";
import type { RunFilters, RunOut } from "@/lib/schemas/runs";
import { pointLabel } from "@/lib/schemas/sweeps";
import { STATUSES as RUN_STATUSES } from "@/lib/schemas/common";
import { StatusBadge } from "@/components/ui/status-badge";
import { ProgressBar } from "@/components/ui/progress-bar";
import { useUrlState } from "@/components/ui/use-url-state";
import { btnCls, inputCls, primaryBtnCls } from "@/components/ui/controls";

const STATUSES: readonly string[] = RUN_STATUSES;
const ROW_H = 48;
const SELECT_KEY = "turnlens.compareSelection";
const WIDTHS_KEY = "turnlens.runsColumnWidths";

/** Column widths in px (drag a header's right edge; kept in localStorage). */
const DEFAULT_WIDTHS: Record<string, number> = { name: 360, project: 120, status: 112, envId: 112, estimator: 104, progress: 128, createdAt: 168 };
const METRIC_WIDTH = 128;
const MIN_WIDTH = 64;

function useColumnWidths() {
  const [widths, setWidths] = useState<Record<string, number>>({});
  useEffect(() => {
    try {
      setWidths(JSON.parse(localStorage.getItem(WIDTHS_KEY) ?? "{}"));
    } catch {
      /* defaults */
    }
  }, []);
  const widthOf = (col: string) => widths[col] ?? DEFAULT_WIDTHS[col] ?? METRIC_WIDTH;
  const resize = (col: string, px: number) =>
    setWidths((w) => {
      const next = { ...w, [col]: Math.max(MIN_WIDTH, Math.round(px)) };
      localStorage.setItem(WIDTHS_KEY, JSON.stringify(next));
      return next;
    });
  return { widthOf, resize };
}

/** A drag handle on a header's right edge (pointer capture, so the drag survives leaving the header). */
function ResizeHandle({ col, width, resize }: { col: string; width: number; resize: (col: string, px: number) => void }) {
  return (
    <span
      role="separator"
      aria-orientation="vertical"
      aria-label={`Resize column ${col}`}
      aria-valuenow={width}
      aria-valuetext={`${width} px`}
      data-testid={`resize-${col}`}
      tabIndex={0}
      className="absolute right-0 top-0 z-10 h-full w-2 cursor-col-resize touch-none hover:bg-indigo-400/40"
      onKeyDown={(e) => (e.key === "ArrowLeft" || e.key === "ArrowRight") && (e.preventDefault(), resize(col, width + (e.key === "ArrowRight" ? 16 : -16)))}
      onPointerDown={(e) => {
        e.preventDefault();
        const el = e.currentTarget;
        el.setPointerCapture(e.pointerId);
        const x0 = e.clientX;
        const move = (ev: PointerEvent) => resize(col, width + ev.clientX - x0);
        const up = () => {
          el.removeEventListener("pointermove", move);
          el.removeEventListener("pointerup", up);
        };
        el.addEventListener("pointermove", move);
        el.addEventListener("pointerup", up);
      }}
    />
  );
}

/** Outcome metrics researchers sort by first, when the runs log them. */
const PREFERRED_COLUMNS = [
  "eval/greedy_success",
  "eval/success_rate_cum",
  "rollout/success_rate",
  "rollout/return_mean",
  "eval/return_mean_cum",
  "train/reward",
];

/** Metric columns: the URL's `cols`, else the outcome metrics present, topped up with the most common keys. */
function useColumns(metricKeys: { key: string }[] | undefined, cols: string | null): string[] {
  return useMemo(() => {
    if (cols !== null) return cols.split(",").filter(Boolean);
    const keys = (metricKeys ?? []).map((k) => k.key);
    const preferred = PREFERRED_COLUMNS.filter((k) => keys.includes(k));
    return [...preferred, ...keys.filter((k) => !preferred.includes(k))].slice(0, 3);
  }, [metricKeys, cols]);
}

type Params = ReturnType<typeof runListParams>;
type SetUrl = ReturnType<typeof useUrlState>["set"];

/** The list's pages, fetched as their rows scroll into view; only the visible rows are rendered. */
function useRunPages(params: Params) {
  const first = useQuery(runsPageQuery(params, 1));
  const total = first.data?.total ?? 0;
  const box = useRef<HTMLDivElement>(null);
  const v = useVirtualizer({ count: total, getScrollElement: () => box.current, estimateSize: () => ROW_H, overscan: 10 });
  const items = v.getVirtualItems();
  const pages = useMemo(() => {
    const s = new Set<number>([1]);
    for (const it of items) s.add(Math.floor(it.index / RUNS_PAGE_SIZE) + 1);
    return [...s].sort((a, b) => a - b);
  }, [items]);
  const results = useQueries({ queries: pages.map((p) => runsPageQuery(params, p)) });
  const rowAt = (i: number): RunOut | undefined => {
    const p = Math.floor(i / RUNS_PAGE_SIZE) + 1;
    const res = results[pages.indexOf(p)]?.data;
    return res?.runs[i % RUNS_PAGE_SIZE];
  };
  return { first, total, box, v, items, rowAt };
}

/** Runs ticked for comparison, kept for the session so that paging and filtering keep them. */
function useCompareSelection() {
  const [selected, setSelected] = useState<string[]>([]);
  useEffect(() => {
    try {
      setSelected(JSON.parse(sessionStorage.getItem(SELECT_KEY) ?? "[]"));
    } catch {
      /* none */
    }
  }, []);
  const toggle = (id: string) =>
    setSelected((s) => {
      const next = s.includes(id) ? s.filter((x) => x !== id) : [...s, id];
      sessionStorage.setItem(SELECT_KEY, JSON.stringify(next));
      return next;
    });
  const clear = () => {
    sessionStorage.removeItem(SELECT_KEY);
    setSelected([]);
  };
  return { selected, toggle, clear };
}

export function RunsTable() {
  const { sp, get, set } = useUrlState();
  const params = useMemo(() => runListParams(sp), [sp]);
  const filters = useQuery(runFiltersQuery());
  const columns = useColumns(filters.data?.metricKeys, get("cols"));
  const { first, total, box, v, items, rowAt } = useRunPages(params);
  const { selected, toggle, clear: clearSel } = useCompareSelection();
  const { widthOf, resize } = useColumnWidths();
  const fixedCols = ["name", "project", "status", "envId", "estimator", "progress"];
  const grid = `2.25rem ${fixedCols.map((c) => `${widthOf(c)}px`).join(" ")} ${columns.map((k) => `${widthOf(k)}px`).join(" ")} ${widthOf("createdAt")}px`;
  const removeCol = (k: string) => set({ cols: columns.filter((c) => c !== k).join(",") });
  const addCol = (k: string) => k && !columns.includes(k) && set({ cols: [...columns, k].join(",") });
  const bad = first.error;
  return (
    <div className="space-y-3">
      <FilterBar params={params} filters={filters.data} set={set} totalLabel={first.data ? `${total.toLocaleString()} run${total === 1 ? "" : "s"}` : ""} />
      <div className="flex flex-wrap items-center gap-2">
        <ConfigFilter params={params} configKeys={filters.data?.configKeys ?? []} set={set} />
        <ColumnChooser metricKeys={filters.data?.metricKeys} columns={columns} addCol={addCol} removeCol={removeCol} />
        {Object.keys(params).length ? (
          <button type="button" className={btnCls} onClick={() => set(Object.fromEntries(Object.keys(params).map((k) => [k, undefined])))}>
            Clear filters
          </button>
        ) : null}
      </div>
      {bad ? (
        <p className="text-sm text-red-600" role="alert">
          Could not load runs: {String(bad.message)}
        </p>
      ) : null}
      {selected.length ? (
        <div className="flex items-center gap-3 rounded-md bg-indigo-50 px-3 py-1.5 text-sm dark:bg-indigo-950/60" data-testid="selection-bar">
          <span>{selected.length} selected</span>
          <Link href={`/compare?runs=${selected.join(",")}`} className={primaryBtnCls} aria-disabled={selected.length < 1}>
            Compare {selected.length}
          </Link>
          <button type="button" className="text-indigo-700 hover:underline dark:text-indigo-300" onClick={clearSel}>
            clear selection
          </button>
        </div>
      ) : null}
      <div
        className="rounded-lg border border-zinc-200 bg-white dark:border-zinc-800 dark:bg-zinc-900"
        role="table"
        aria-label="Runs"
        aria-rowcount={total + 1}
      >
        <div ref={box} className="max-h-[calc(100vh-15rem)] min-h-40 overflow-auto" data-testid="runs-scroll">
          <HeaderRow grid={grid} columns={columns} params={params} set={set} widthOf={widthOf} resize={resize} removeCol={removeCol} />
          <div style={{ height: v.getTotalSize(), position: "relative" }} className="w-max min-w-full">
            {items.map((it) => {
              const r = rowAt(it.index);
              return (
                <div
                  key={it.key}
                  role="row"
                  aria-rowindex={it.index + 2}
                  className="absolute left-0 grid w-full items-center border-b border-zinc-100 text-sm hover:bg-zinc-50 dark:border-zinc-800/60 dark:hover:bg-zinc-800/40"
                  style={{ top: it.start, height: ROW_H, gridTemplateColumns: grid }}
                  data-testid={r ? "run-row" : "run-row-loading"}
                >
                  {r ? (
                    <Row r={r} columns={columns} selected={selected.includes(r.id)} toggle={toggle} />
                  ) : (
                    <span className="col-span-full px-3 text-zinc-400">…</span>
                  )}
                </div>
              );
            })}
          </div>
          {first.data && total === 0 ? (
            <p className="px-3 py-10 text-center text-sm text-zinc-500">
              No runs match.{" "}
              <Link href="/runs/new" className="text-indigo-600 hover:underline">
                Launch one
              </Link>
              .
            </p>
          ) : null}
          {first.isPending ? <p className="px-3 py-10 text-center text-sm text-zinc-400">Loading…</p> : null}
        </div>
      </div>
    </div>
  );
}

/** A filter on one field of the list: "any …" or one of the values the runs have. */
function FilterSelect({
  label,
  any,
  value,
  options,
  onChange,
}: {
  label: string;
  any: string;
  value: string;
  options: readonly string[] | undefined;
  onChange: (v: string | undefined) => void;
}) {
  return (
    <select aria-label={label} value={value} onChange={(e) => onChange(e.target.value || undefined)} className={inputCls}>
      <option value="">{any}</option>
      {options?.map((s) => (
        <option key={s} value={s}>
          {s}
        </option>
      ))}
    </select>
  );
}

function FilterBar({ params, filters, set, totalLabel }: { params: Params; filters: RunFilters | undefined; set: SetUrl; totalLabel: string }) {
  return (
    <div className="flex flex-wrap items-center gap-2">
      <input
        defaultValue={params.q ?? ""}
        placeholder="Search run names…"
        aria-label="Search run names"
        className={`${inputCls} w-56`}
        onKeyDown={(e) => e.key === "Enter" && set({ q: (e.target as HTMLInputElement).value || undefined })}
      />
      <FilterSelect
        label="Filter by project"
        any="any project"
        value={params.project ?? ""}
        options={filters?.projects}
        onChange={(v) => set({ project: v })}
      />
      <FilterSelect label="Filter by status" any="any status" value={params.status ?? ""} options={STATUSES} onChange={(v) => set({ status: v })} />
      <FilterSelect
        label="Filter by environment"
        any="any environment"
        value={params.envId ?? ""}
        options={filters?.envIds}
        onChange={(v) => set({ envId: v })}
      />
      <FilterSelect
        label="Filter by estimator"
        any="any estimator"
        value={params.estimator ?? ""}
        options={filters?.estimators}
        onChange={(v) => set({ estimator: v })}
      />
      <FilterSelect label="Filter by tag" any="any tag" value={params.tag ?? ""} options={filters?.tags} onChange={(v) => set({ tag: v })} />
      {params.sweep ? <SweepFilter id={params.sweep} clear={() => set({ sweep: undefined })} /> : null}
      <span className="ml-auto text-sm tabular-nums text-zinc-500" data-testid="runs-total">
        {totalLabel}
      </span>
      <Link href="/runs/new" className={primaryBtnCls}>
        Launch run
      </Link>
    </div>
  );
}

function ConfigFilter({ params, configKeys, set }: { params: Params; configKeys: string[]; set: SetUrl }) {
  const [cfgDraft, setCfgDraft] = useState(params.config ?? "");
  useEffect(() => setCfgDraft(params.config ?? ""), [params.config]);
  return (
    <form className="flex min-w-0 flex-1 items-center gap-2" onSubmit={(e) => (e.preventDefault(), set({ config: cfgDraft.trim() || undefined }))}>
      <input
        value={cfgDraft}
        onChange={(e) => setCfgDraft(e.target.value)}
        list="config-keys"
        placeholder="Config filter, e.g. lr<=1e-4; envConfig.size=6; estimatorParams.gamma=0.95"
        aria-label="Filter by config values"
        className={`${inputCls} min-w-0 flex-1 font-mono`}
      />
      <datalist id="config-keys">
        {configKeys.map((k) => (
          <option key={k} value={k} />
        ))}
      </datalist>
      <button type="submit" className={btnCls}>
        Apply
      </button>
    </form>
  );
}

function ColumnChooser({
  metricKeys,
  columns,
  addCol,
  removeCol,
}: {
  metricKeys: { key: string; runs: number }[] | undefined;
  columns: string[];
  addCol: (k: string) => void;
  removeCol: (k: string) => void;
}) {
  return (
    <details className="relative" data-testid="column-chooser">
      <summary className={`${btnCls} cursor-pointer list-none`}>Metric columns ({columns.length})</summary>
      <div
        className="absolute right-0 z-30 mt-1 max-h-80 w-80 overflow-auto rounded-md border border-zinc-200 bg-white p-2 text-sm shadow-lg dark:border-zinc-700 dark:bg-zinc-900"
        role="group"
        aria-label="Metric columns to show"
      >
        {metricKeys?.length ? null : <p className="text-zinc-500">No metrics logged yet.</p>}
        {metricKeys?.map((k) => (
          <label key={k.key} className="flex items-center gap-2 rounded px-1 py-0.5 hover:bg-zinc-100 dark:hover:bg-zinc-800">
            <input
              type="checkbox"
              className="accent-indigo-600"
              checked={columns.includes(k.key)}
              onChange={(e) => (e.target.checked ? addCol(k.key) : removeCol(k.key))}
            />
            <span className="min-w-0 flex-1 break-all font-mono text-xs">{k.key}</span>
            <span className="text-xs text-zinc-400" title="runs that log it">
              {k.runs}
            </span>
          </label>
        ))}
      </div>
    </details>
  );
}

/** The header row: sortable columns (a second click reverses), metric columns removable, every width dragged. */
function HeaderRow({
  grid,
  columns,
  params,
  set,
  widthOf,
  resize,
  removeCol,
}: {
  grid: string;
  columns: string[];
  params: Params;
  set: SetUrl;
  widthOf: (col: string) => number;
  resize: (col: string, px: number) => void;
  removeCol: (k: string) => void;
}) {
  const sort = params.sort ?? "createdAt";
  const order = params.order ?? "desc";
  const sortBy = (key: string) => set({ sort: key === "createdAt" ? undefined : key, order: sort === key && order === "desc" ? "asc" : undefined });
  const arrow = (key: string) => (sort === key ? (order === "asc" ? " ▲" : " ▼") : "");
  const header = (col: string, body: ReactNode, cls = "px-3") => (
    <span role="columnheader" className={`relative py-2 ${cls}`}>
      {body}
      <ResizeHandle col={col} width={widthOf(col)} resize={resize} />
    </span>
  );
  return (
    <div
      role="row"
      className="sticky top-0 z-10 grid w-max min-w-full border-b border-zinc-200 bg-white text-left text-xs text-zinc-500 dark:border-zinc-800 dark:bg-zinc-900"
      style={{ gridTemplateColumns: grid }}
    >
      <span role="columnheader" className="px-2 py-2">
        <span className="sr-only">select</span>
      </span>
      {header(
        "name",
        <button type="button" onClick={() => sortBy("name")}>
          Name{arrow("name")}
        </button>,
      )}
      {header("project", "Project")}
      {header(
        "status",
        <button type="button" onClick={() => sortBy("status")}>
          Status{arrow("status")}
        </button>,
      )}
      {header(
        "envId",
        <button type="button" onClick={() => sortBy("envId")}>
          Env{arrow("envId")}
        </button>,
      )}
      {header(
        "estimator",
        <button type="button" onClick={() => sortBy("estimator")}>
          Estimator{arrow("estimator")}
        </button>,
      )}
      {header("progress", "Progress")}
      {columns.map((k) => (
        <span
          role="columnheader"
          key={k}
          className="relative flex items-start justify-end gap-1 px-2 py-1 text-right"
          title={k}
          data-testid="metric-header"
          data-key={k}
        >
          {/* the namespace above the name: "eval/success_rate_cum" and "rollout/success_rate" stay apart */}
          <button type="button" onClick={() => sortBy(`metric:${k}`)} title={`sort by the last value of ${k}`} className="min-w-0 text-right leading-tight">
            {k.includes("/") ? <span className="block truncate text-[10px] text-zinc-400">{k.slice(0, k.lastIndexOf("/") + 1)}</span> : null}
            <span className="block break-all">
              {k.split("/").pop()}
              {arrow(`metric:${k}`)}
            </span>
          </button>
          <button type="button" onClick={() => removeCol(k)} aria-label={`Remove column ${k}`} className="text-zinc-400 hover:text-zinc-700">
            ×
          </button>
          <ResizeHandle col={k} width={widthOf(k)} resize={resize} />
        </span>
      ))}
      {header(
        "createdAt",
        <button type="button" onClick={() => sortBy("createdAt")}>
          Created{arrow("createdAt")}
        </button>,
      )}
    </div>
  );
}

/** A sweep's run: its grid point and seed, linking to the sweep's comparison. */
function SweepChip({ id, params }: { id: string; params: NonNullable<RunOut["sweepParams"]> }) {
  return (
    <Link
      href={`/sweeps/${id}`}
      className="shrink-0 rounded bg-indigo-50 px-1 text-[11px] text-indigo-700 hover:underline dark:bg-indigo-950 dark:text-indigo-300"
      title="Open the sweep: its runs grouped by grid point"
      data-testid="run-sweep"
    >
      sweep · {pointLabel(params.point)} · s{params.seed}
    </Link>
  );
}

/** The runs table narrowed to one sweep (?sweep=): open it, or show every run again. */
function SweepFilter({ id, clear }: { id: string; clear: () => void }) {
  return (
    <span
      className="flex items-center gap-1.5 rounded-full border border-indigo-200 px-2 py-0.5 text-sm dark:border-indigo-900"
      data-testid="runs-sweep-filter"
    >
      <Link href={`/sweeps/${id}`} className="text-indigo-700 hover:underline dark:text-indigo-400">
        one sweep
      </Link>
      <button type="button" aria-label="Show all runs, not only the sweep's" onClick={clear} className="text-zinc-500 hover:text-zinc-800">
        ×
      </button>
    </span>
  );
}

function Row({ r, columns, selected, toggle }: { r: RunOut; columns: string[]; selected: boolean; toggle: (id: string) => void }) {
  return (
    <>
      <span role="cell" className="px-2">
        <input
          type="checkbox"
          className="size-4 accent-indigo-600"
          checked={selected}
          onChange={() => toggle(r.id)}
          aria-label={`Select ${r.name} for comparison`}
        />
      </span>
      <span role="cell" className="min-w-0 px-3 leading-tight" title={[r.name, ...r.tags].join("\n")}>
        <Link href={`/runs/${r.id}`} className="block truncate font-medium text-indigo-700 hover:underline dark:text-indigo-400">
          {r.name}
        </Link>
        {r.tags.length || r.sweepId ? (
          <span className="mt-0.5 flex gap-1 overflow-hidden" data-testid="run-tags">
            {r.sweepId && r.sweepParams ? <SweepChip id={r.sweepId} params={r.sweepParams} /> : null}
            {r.tags.map((t) => (
              <span key={t} className="shrink-0 rounded bg-zinc-100 px-1 text-[11px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-400">
                {t}
              </span>
            ))}
          </span>
        ) : null}
      </span>
      <span role="cell" className="truncate px-3 text-xs" title={r.project} data-testid="run-project">
        {r.project}
      </span>
      <span role="cell" className="px-3">
        <StatusBadge status={r.status} />
      </span>
      <span role="cell" className="truncate px-3 font-mono text-xs">
        {r.envId ?? "—"}
      </span>
      <span role="cell" className="truncate px-3 font-mono text-xs">
        {r.estimator ?? <span className="text-zinc-400">{r.jobKind ?? r.kind}</span>}
      </span>
      <span role="cell" className="px-3">
        <ProgressBar value={r.progress} />
      </span>
      {columns.map((k) => (
        <span role="cell" key={k} className="px-2 text-right tabular-nums" title={`${k}: ${r.summary[k] ?? "not logged"}`}>
          {fmt(r.summary[k])}
        </span>
      ))}
      <span role="cell" className="truncate px-3 text-xs text-zinc-500" title={r.createdAt} suppressHydrationWarning>
        {new Date(r.createdAt).toLocaleString()}
      </span>
    </>
  );
}
