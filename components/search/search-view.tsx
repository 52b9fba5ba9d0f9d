"use client";
// Trajectory search over runs or a project: the query lives in the URL (a search is a link), the
// form edits a draft of it and applies it on submit. Each hit links to the trajectory beside its
// group's credit heatmap, opened at the turns that matched. A page the server answers `partial`
// (its time budget spent before the page filled) is continued from its cursor until the page is
// full or the search ends, the view showing how many candidates were checked meanwhile.
import Link from "next/link";
import { useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { runFiltersQuery } from "@/lib/queries";
import {
  SEARCH_KEYS as KEYS,
  joinParts,
  pageParts,
  searchParamsOf as paramsOf,
  searchQuery,
  type SearchKey as Key,
  type SearchParams,
} from "@/lib/queries/search";
import { SEARCH_SORTS, TEXT_FIELDS, type TrajectorySearchResult } from "@/lib/schemas/search";
import { useUrlState } from "@/components/ui/use-url-state";
import { btnCls, cardCls, inputCls, labelCls, primaryBtnCls } from "@/components/ui/controls";
import { fmt } from "@/lib/charts/format";

export function SearchView() {
  const { get, set } = useUrlState();
  const applied = paramsOf(get);
  const appliedKey = JSON.stringify(applied);
  const [draft, setDraft] = useState<SearchParams>(applied);
  // the URL changed (back, a link): the form follows
  useEffect(() => setDraft(JSON.parse(appliedKey)), [appliedKey]);
  // cursors of the pages before this one (the first page has none)
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  // biome-ignore lint/correctness/useExhaustiveDependencies: other search parameters start again at the first page
  useEffect(() => setCursors([]), [appliedKey]);
  const [stopped, setStopped] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new page or search searches on
  useEffect(() => setStopped(false), [appliedKey, cursor]);
  const query = usePage(cursor ? { ...applied, cursor } : applied, stopped);
  const filters = useQuery(runFiltersQuery());
  const d = (k: Key) => draft[k] ?? "";
  const edit = (k: Key) => (e: { target: { value: string } }) => setDraft((p) => ({ ...p, [k]: e.target.value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    set(Object.fromEntries(KEYS.map((k) => [k, draft[k]])), { push: true });
  };
  const num = (k: Key, placeholder: string, w = "w-20") => (
    <input aria-label={k} className={`${inputCls} ${w}`} inputMode="decimal" placeholder={placeholder} value={d(k)} onChange={edit(k)} />
  );
  // turns are numbered from 1 on screen (t1 is the first, as in the trajectory browser), from 0 in the API
  const turnNum = (k: "minTurn" | "maxTurn", placeholder: string) => {
    const v = d(k);
    const shown = /^\d+$/.test(v) ? String(Number(v) + 1) : v;
    const onChange = (e: { target: { value: string } }) => {
      const t = e.target.value.trim();
      setDraft((p) => ({ ...p, [k]: /^\d+$/.test(t) && Number(t) >= 1 ? String(Number(t) - 1) : t }));
    };
    return <input aria-label={k} className={`${inputCls} w-16`} inputMode="numeric" placeholder={placeholder} value={shown} onChange={onChange} />;
  };
  const runCount = applied.runs ? applied.runs.split(",").length : 0;
  const firstName = query.data?.trajectories[0]?.runName;
  const scope = runCount === 1 && firstName ? `run ${firstName}` : runCount ? `${runCount} runs` : applied.project ? `project ${applied.project}` : "every run";
  return (
    <div className="space-y-4">
      <h1 className="text-lg font-semibold">Trajectory search {scope ? <span className="font-normal text-zinc-500">· {scope}</span> : null}</h1>
      <form onSubmit={submit} className={`${cardCls} space-y-3 p-3`} data-testid="search-form">
        <div className="flex flex-wrap items-end gap-2">
          <label className="flex min-w-64 flex-1 flex-col gap-1">
            <span className={labelCls}>Text</span>
            <input
              aria-label="text"
              className={inputCls}
              placeholder='words and "quoted phrases", e.g. search "go to desk"'
              value={d("text")}
              onChange={edit("text")}
            />
          </label>
          <label className="flex flex-col gap-1">
            <span className={labelCls}>in</span>
            <select aria-label="in" className={inputCls} value={d("in") || "any"} onChange={edit("in")}>
              {TEXT_FIELDS.map((f) => (
                <option key={f} value={f}>
                  {f === "any" ? "observation or action" : f}
                </option>
              ))}
            </select>
          </label>
          <label className="flex flex-col gap-1">
            <span className={labelCls}>Outcome</span>
            <select aria-label="outcome" className={inputCls} value={d("outcome")} onChange={edit("outcome")}>
              <option value="">any</option>
              <option value="success">success</option>
              <option value="failure">failure</option>
            </select>
          </label>
          <label className="flex flex-col gap-1">
            <span className={labelCls}>Runs (ids)</span>
            <input aria-label="runs" className={`${inputCls} w-48`} placeholder="id,id" value={d("runs")} onChange={edit("runs")} />
          </label>
          <label className="flex flex-col gap-1">
            <span className={labelCls}>or project</span>
            <input aria-label="project" list="search-projects" className={`${inputCls} w-32`} value={d("project")} onChange={edit("project")} />
            <datalist id="search-projects">
              {filters.data?.projects.map((p) => (
                <option key={p} value={p} />
              ))}
            </datalist>
          </label>
        </div>
        <div className="flex flex-wrap items-end gap-x-4 gap-y-2 text-sm">
          <Field label="Length">
            {num("minLength", "min")}–{num("maxLength", "max")}
          </Field>
          <Field label="Return">
            {num("minReturn", "min")}–{num("maxReturn", "max")}
          </Field>
          <Field label="Step">
            {num("step", "=")} or {num("minStep", "min")}–{num("maxStep", "max")}
          </Field>
          <Field label="Env">
            <input aria-label="envId" className={`${inputCls} w-28`} value={d("envId")} onChange={edit("envId")} />
          </Field>
          <Field label="Task uid">
            <input aria-label="task" className={`${inputCls} w-28`} value={d("task")} onChange={edit("task")} />
          </Field>
          <Field label="Label">
            <input aria-label="label" className={`${inputCls} w-32`} placeholder="e.g. loops" value={d("label")} onChange={edit("label")} />
          </Field>
        </div>
        <fieldset className="flex flex-wrap items-end gap-x-4 gap-y-2 rounded-md border border-dashed border-zinc-300 p-2 text-sm dark:border-zinc-700">
          <legend className={`${labelCls} px-1`}>One turn meets all of</legend>
          <Field label="Turn (t1 = first)">
            {turnNum("minTurn", "from")}–{turnNum("maxTurn", "to")}
          </Field>
          <Field label="Advantage">
            <select aria-label="advantage" className={inputCls} value={d("advantage")} onChange={edit("advantage")}>
              <option value="">any sign</option>
              <option value="negative">negative</option>
              <option value="positive">positive</option>
              <option value="zero">zero</option>
            </select>
            {num("minAdvantage", "min")}–{num("maxAdvantage", "max")}
          </Field>
          <Field label="Reward">
            {num("minReward", "min")}–{num("maxReward", "max")}
          </Field>
          <Field label="Valid">
            <select aria-label="valid" className={inputCls} value={d("valid")} onChange={edit("valid")}>
              <option value="">any</option>
              <option value="true">valid</option>
              <option value="false">invalid</option>
            </select>
          </Field>
          <Field label="Anchor">
            <input aria-label="anchor" className={`${inputCls} w-32`} value={d("anchor")} onChange={edit("anchor")} />
          </Field>
        </fieldset>
        <div className="flex flex-wrap items-center gap-2 text-sm">
          <span className={labelCls}>Sort</span>
          <select aria-label="sort" className={inputCls} value={d("sort") || "step"} onChange={edit("sort")}>
            {SEARCH_SORTS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          <select aria-label="order" className={inputCls} value={d("order") || "desc"} onChange={edit("order")}>
            <option value="desc">descending</option>
            <option value="asc">ascending</option>
          </select>
          <button type="submit" className={`${primaryBtnCls} ml-auto`}>
            Search
          </button>
          <button type="button" className={btnCls} onClick={() => setDraft({ runs: draft.runs ?? "", project: draft.project ?? "" })}>
            Clear
          </button>
        </div>
      </form>
      <Results
        params={applied}
        query={query}
        page={cursors.length}
        onStop={() => setStopped(true)}
        onNext={(c) => setCursors((p) => [...p, c])}
        onPrev={() => setCursors((p) => p.slice(0, -1))}
      />
    </div>
  );
}

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="flex flex-col gap-1">
      <span className={labelCls}>{label}</span>
      <div className="flex items-center gap-1">{children}</div>
    </div>
  );
}

interface Query {
  /** the page's parts put together (lib/queries/search.ts joinParts) */
  data?: TrajectorySearchResult;
  error: Error | null;
  isFetching: boolean;
  /** a part answered `partial` and the next one is on its way */
  searching: boolean;
}

/** One page of the search from `params`: its parts (pageParts), as the query cache knows them, fetched and put together. */
function usePage(params: SearchParams, stopped: boolean): Query {
  const client = useQueryClient();
  const parts = pageParts(params, (p) => client.getQueryData(searchQuery(p).queryKey), stopped);
  const results = useQueries({ queries: parts.map(searchQuery) });
  const error = results.find((r) => r.error)?.error ?? null;
  const isFetching = results.some((r) => r.isFetching);
  const answers = results.filter((r) => r.data).map((r) => r.data!);
  if (!answers.length || !results[0].data) return { error, isFetching, searching: false };
  const data = joinParts(answers);
  return { data, error, isFetching, searching: !stopped && data.partial && !error };
}

function Results({
  params,
  query,
  page,
  onNext,
  onPrev,
  onStop,
}: {
  params: SearchParams;
  query: Query;
  page: number;
  onNext: (cursor: string) => void;
  onPrev: () => void;
  onStop: () => void;
}) {
  const { data, error, isFetching, searching } = query;
  if (error)
    return (
      <p className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
        {error.message}
      </p>
    );
  if (!data) return <p className="text-sm text-zinc-500">{isFetching ? "Searching…" : ""}</p>;
  const hits = data.trajectories;
  return (
    <div className="space-y-2">
      <p className="text-sm text-zinc-500" data-testid="search-summary">
        {searching
          ? `Searching… ${data.scanned.toLocaleString()} candidates checked, ${hits.length} trajector${hits.length === 1 ? "y" : "ies"} found`
          : hits.length
            ? `${hits.length} trajector${hits.length === 1 ? "y" : "ies"} on this page`
            : "No trajectory matches"}
        {page > 0 ? ` (page ${page + 1})` : ""}
        {!searching && data.partial ? ` · ${data.scanned.toLocaleString()} candidates checked so far; more may match further on` : ""}
        {isFetching && !searching ? " · updating…" : ""}
        {searching ? (
          <button type="button" className={`${btnCls} ml-2`} onClick={onStop}>
            Stop
          </button>
        ) : null}
      </p>
      {!hits.length && params.step ? <NearestSteps params={params} /> : null}
      {hits.length ? (
        <div className={`${cardCls} overflow-x-auto`}>
          <table className="w-full text-sm" data-testid="search-results">
            <thead className="text-left text-xs uppercase tracking-wide text-zinc-500">
              <tr className="border-b border-zinc-200 dark:border-zinc-800">
                <th className="px-3 py-2">Run</th>
                <th className="px-3 py-2 text-right">Step</th>
                <th className="px-3 py-2">Task</th>
                <th className="px-3 py-2">Env</th>
                <th className="px-3 py-2">Outcome</th>
                <th className="px-3 py-2 text-right">Return</th>
                <th className="px-3 py-2 text-right">Turns</th>
                <th className="px-3 py-2">Matched turns</th>
                <th className="px-3 py-2" />
              </tr>
            </thead>
            <tbody>
              {hits.map((h) => {
                const href = `/runs/${h.runId}/trajectories?step=${h.step}&group=${h.groupId}&traj=${h.id}`;
                return (
                  <tr key={h.id} className="border-b border-zinc-100 last:border-0 dark:border-zinc-800/60" data-testid="search-hit">
                    <td className="px-3 py-1.5">
                      <Link className="hover:underline" href={`/runs/${h.runId}`}>
                        {h.runName}
                      </Link>
                    </td>
                    <td className="px-3 py-1.5 text-right tabular-nums">{h.step}</td>
                    <td className="px-3 py-1.5 font-mono text-xs">
                      {h.task} <span className="text-zinc-400">#{h.index}</span>
                    </td>
                    <td className="px-3 py-1.5">{h.envId}</td>
                    <td className={`px-3 py-1.5 ${h.success ? "text-emerald-700 dark:text-emerald-400" : "text-red-700 dark:text-red-400"}`}>
                      {h.success ? "success" : "failure"}
                    </td>
                    <td className="px-3 py-1.5 text-right tabular-nums">{fmt(h.reward)}</td>
                    <td className="px-3 py-1.5 text-right tabular-nums">{h.length}</td>
                    <td className="px-3 py-1.5">
                      <span className="flex flex-wrap gap-1">
                        {h.matchedTurns.slice(0, 12).map((t) => (
                          <span key={t} className="rounded bg-indigo-50 px-1.5 text-xs tabular-nums text-indigo-700 dark:bg-indigo-950 dark:text-indigo-300">
                            t{t + 1}
                          </span>
                        ))}
                        {h.matchedTurns.length > 12 ? <span className="text-xs text-zinc-500">+{h.matchedTurns.length - 12}</span> : null}
                      </span>
                    </td>
                    <td className="px-3 py-1.5 text-right">
                      <Link className="whitespace-nowrap text-indigo-600 hover:underline dark:text-indigo-400" href={href}>
                        turns &amp; credit →
                      </Link>{" "}
                      <Link
                        className="whitespace-nowrap text-indigo-600 hover:underline dark:text-indigo-400"
                        href={`/tasks?runs=${h.runId}&task=${encodeURIComponent(h.task)}&step=${h.step}&a=${h.id}`}
                      >
                        task over training →
                      </Link>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
      <div className="flex gap-2">
        <button type="button" className={btnCls} disabled={page === 0} onClick={onPrev}>
          ← Previous
        </button>
        <button type="button" className={btnCls} disabled={!data.next || searching} onClick={() => data.next && onNext(data.next)}>
          Next →
        </button>
      </div>
    </div>
  );
}

/** A step with no stored trajectories (a chart point between rollout steps): the nearest steps that have some. */
function NearestSteps({ params }: { params: SearchParams }) {
  const { step, ...rest } = params;
  const below = useQuery(searchQuery({ ...rest, maxStep: step, sort: "step", order: "desc", pageSize: "1" }));
  const above = useQuery(searchQuery({ ...rest, minStep: step, sort: "step", order: "asc", pageSize: "1" }));
  const steps = [below.data?.trajectories[0]?.step, above.data?.trajectories[0]?.step].filter((s): s is number => s !== undefined && String(s) !== step);
  if (!steps.length) return null;
  const qs = (s: number) => new URLSearchParams({ ...rest, step: String(s) }).toString();
  return (
    <p className="text-sm" data-testid="nearest-steps">
      No trajectories are stored at step {step}; nearest:{" "}
      {steps.map((s, i) => (
        <span key={s}>
          {i ? ", " : ""}
          <Link className="text-indigo-600 hover:underline dark:text-indigo-400" href={`/search?${qs(s)}`}>
            step {s}
          </Link>
        </span>
      ))}
    </p>
  );
}
