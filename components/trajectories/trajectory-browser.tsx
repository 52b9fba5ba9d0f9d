"use client";
// Step -> task group -> the G trajectories side by side -> turns. Filters (outcome, length,
// return), keyboard navigation (j/k turn, h/l trajectory, n/p group), a turn opened from a
// heatmap cell is scrolled to and highlighted. Everything selected lives in the URL.
import Link from "next/link";
import { useEffect, useMemo } from "react";
import { useQuery } from "@tanstack/react-query";
import { groupCreditQuery, trajectoryQuery } from "@/lib/queries";
import { divergingColor, symmetricMax, textOn } from "@/lib/charts/diverging";
import { fmt, fmtSigned } from "@/lib/charts/format";
import { creditSourceFromUrl, type GroupCredit } from "@/lib/schemas/credit";
import { useTheme } from "@/components/ui/use-theme";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { RunCrumbs } from "@/components/runs/run-crumbs";
import { TurnList } from "./turn-list";
import { LabelBar } from "./label-bar";
import { TaskTimelineLink } from "./task-link";
import { tokenNote } from "./token-view";
import { TOKEN_TINTS, tokenTintMax, type TokenTint } from "@/lib/charts/tokenize";
import { useStepGroups } from "@/components/runs/use-step-groups";
import { defaultGroup } from "@/lib/charts/prepare-heatmap";

const numOrNull = (s: string | null) => (s === null || s === "" || !Number.isFinite(Number(s)) ? null : Number(s));

/** The browser's state, all of it in the URL: step, group, filters, trajectory, turn, estimator, tint. */
function useTrajectoryBrowser(runId: string) {
  const { get, set, steps, step, groups } = useStepGroups(runId);
  const mixedOnly = get("mixed") === "1";
  const shownGroups = useMemo(() => (groups?.groups ?? []).filter((g) => !mixedOnly || (g.successRate > 0 && g.successRate < 1)), [groups, mixedOnly]);
  // like the credit heatmap: open on the first group with mixed outcomes (an all-fail or
  // all-success group has every advantage 0 under group-relative estimators: nothing to see)
  const groupId = get("group") ?? defaultGroup(shownGroups)?.id;
  const est = get("est") ?? undefined;
  const pRaw = get("p");
  const source = useMemo(() => creditSourceFromUrl(est, pRaw), [est, pRaw]);
  const ready = step !== undefined && !!groupId;
  const stored = useQuery({ ...groupCreditQuery(runId, step ?? -1, groupId ?? "", {}), enabled: ready });
  const recomputed = useQuery({ ...groupCreditQuery(runId, step ?? -1, groupId ?? "", source), enabled: ready && !!est });
  const g = stored.data && stored.data.group.id === groupId ? stored.data : undefined;
  const r = est && recomputed.data && recomputed.data.group.id === groupId ? recomputed.data : undefined;

  // filters over the group's trajectories
  const outcome = get("outcome") ?? "";
  const [minLen, maxLen, minR, maxR] = ["minLen", "maxLen", "minR", "maxR"].map((k) => numOrNull(get(k)));
  const rows = useMemo(
    () =>
      (g?.trajectories ?? [])
        .map((t, row) => ({ t, row }))
        .filter(
          ({ t }) =>
            (outcome === "" || (outcome === "success") === t.success) &&
            (minLen === null || t.length >= minLen) &&
            (maxLen === null || t.length <= maxLen) &&
            (minR === null || t.reward >= minR) &&
            (maxR === null || t.reward <= maxR),
        ),
    [g, outcome, minLen, maxLen, minR, maxR],
  );
  const trajId = get("traj") ?? rows[0]?.t.id;
  const { data: traj, error: trajError } = useQuery({ ...trajectoryQuery(trajId ?? ""), enabled: !!trajId });
  const turnParam = numOrNull(get("turn"));
  const selRow = g?.trajectories.findIndex((t) => t.id === trajId) ?? -1;
  const values = (r ?? g)?.advantages;
  const max = useMemo(() => symmetricMax((values ?? []).flat()), [values]);
  const tokens = get("tokens") !== "0";
  const hasTokens = !!traj?.turns.some((u) => u.tokens);
  const tint: TokenTint = hasTokens && (TOKEN_TINTS as readonly string[]).includes(get("tint") ?? "") ? (get("tint") as TokenTint) : "advantage";
  const tintMax = useMemo(() => (tint === "advantage" || !traj ? 1 : tokenTintMax(traj.turns, tint)), [traj, tint]);

  return {
    get,
    set,
    steps,
    step,
    groups,
    mixedOnly,
    shownGroups,
    groupId,
    est,
    pRaw,
    stored,
    recomputed,
    g,
    r,
    outcome,
    rows,
    trajId,
    traj,
    trajError,
    turnParam,
    selRow,
    values,
    max,
    tokens,
    hasTokens,
    tint,
    tintMax,
  };
}
type BrowserState = ReturnType<typeof useTrajectoryBrowser>;

/** j/k turn, h/l trajectory, n/p group (not while typing). */
function useBrowserKeys({ traj, turnParam, rows, trajId, shownGroups, groupId, set }: BrowserState) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const el = e.target as HTMLElement;
      if (e.metaKey || e.ctrlKey || e.altKey || ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName) || el.isContentEditable) return;
      const turns = traj?.turns.length ?? 0;
      const cur = turnParam ?? -1;
      const ti = rows.findIndex((x) => x.t.id === trajId);
      const gi = shownGroups.findIndex((x) => x.id === groupId);
      if (e.key === "j" && turns) set({ turn: Math.min(turns - 1, cur + 1) });
      else if (e.key === "k" && turns) set({ turn: Math.max(0, cur - 1) });
      else if ((e.key === "l" || e.key === "h") && rows.length) {
        const next = rows[Math.max(0, Math.min(rows.length - 1, ti + (e.key === "l" ? 1 : -1)))];
        set({ traj: next.t.id, turn: undefined });
      } else if ((e.key === "n" || e.key === "p") && shownGroups.length) {
        const next = shownGroups[Math.max(0, Math.min(shownGroups.length - 1, gi + (e.key === "n" ? 1 : -1)))];
        set({ group: next.id, traj: undefined, turn: undefined });
      } else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [traj, turnParam, rows, trajId, shownGroups, groupId, set]);
}

export function TrajectoryBrowser({ runId }: { runId: string }) {
  const theme = useTheme();
  const st = useTrajectoryBrowser(runId);
  useBrowserKeys(st);
  const { g, stored, recomputed, est, tokens, traj, hasTokens, rows, trajId, turnParam, max, values, set } = st;
  return (
    <div className="space-y-4">
      <RunCrumbs runId={runId} section="trajectories" active="trajectories" />
      <div className="grid gap-4 lg:grid-cols-[18rem_1fr]">
        <aside className="space-y-4 lg:sticky lg:top-16 lg:max-h-[calc(100vh-5rem)] lg:self-start lg:overflow-y-auto">
          <StepSelect st={st} />
          <TrajectoryFilters st={st} />
          <GroupList st={st} />
          <p className="text-xs text-zinc-500">
            <kbd>j</kbd>/<kbd>k</kbd> next/previous turn · <kbd>h</kbd>/<kbd>l</kbd> trajectory · <kbd>n</kbd>/<kbd>p</kbd> group
          </p>
        </aside>
        <section className="min-w-0 space-y-4">
          {g ? <GroupHeader runId={runId} st={st} g={g} /> : null}
          {stored.error ? <p className="text-sm text-red-600">{stored.error.message}</p> : null}
          {recomputed.error && est ? <p className="text-sm text-red-600">{recomputed.error.message}</p> : null}
          {g && tokens && traj ? (
            <p className="text-[11px] text-zinc-500" data-testid="token-note">
              {tokenNote(hasTokens)}
            </p>
          ) : null}
          {g ? (
            <SideBySide
              g={g}
              values={values ?? g.advantages}
              rows={rows}
              trajId={trajId}
              turn={turnParam}
              max={max}
              theme={theme}
              onPick={(id, turn) => set({ traj: id, turn })}
            />
          ) : null}
          <LabelBar runId={runId} trajId={trajId} turn={turnParam} />
          <TurnsPanel st={st} theme={theme} />
        </section>
      </div>
    </div>
  );
}

function StepSelect({ st }: { st: BrowserState }) {
  const { step, steps, set } = st;
  return (
    <div className={cardCls}>
      <label htmlFor="step-select" className={`block border-b border-zinc-200 px-3 py-2 dark:border-zinc-800 ${labelCls}`}>
        Step / batch
      </label>
      <select
        id="step-select"
        className={`m-2 w-[calc(100%-1rem)] min-w-0 truncate pr-7 ${inputCls}`}
        value={step ?? ""}
        onChange={(e) => set({ step: e.target.value, group: undefined, traj: undefined, turn: undefined })}
      >
        {steps?.steps.map((s) => (
          <option key={s.id} value={s.step}>
            step {s.step} · {s.trajectories} traj · {s.successRate === null ? "—" : `${Math.round(s.successRate * 100)} % ok`}
          </option>
        ))}
      </select>
      {steps && steps.steps.length === 0 ? <p className="px-3 pb-3 text-sm text-zinc-500">No rollouts stored yet.</p> : null}
    </div>
  );
}

/** Outcome, length and return ranges, and mixed-outcome groups only. */
function TrajectoryFilters({ st }: { st: BrowserState }) {
  const { get, set, outcome, mixedOnly } = st;
  const filterInput = (k: string, label: string) => (
    <label className="flex items-center gap-1">
      <span className="sr-only">{label}</span>
      <input
        type="number"
        className={`${inputCls} w-16`}
        placeholder={label.split(" ")[0]}
        aria-label={label}
        defaultValue={get(k) ?? ""}
        onChange={(e) => set({ [k]: e.target.value || undefined, traj: undefined, turn: undefined })}
      />
    </label>
  );

  return (
    <fieldset className={`${cardCls} min-w-0 space-y-2 p-3 text-sm`} aria-label="Filter trajectories">
      <div className={labelCls}>Filter trajectories</div>
      <select
        className={`${inputCls} w-full`}
        aria-label="Outcome"
        value={outcome}
        onChange={(e) => set({ outcome: e.target.value || undefined, traj: undefined, turn: undefined })}
      >
        <option value="">any outcome</option>
        <option value="success">successes</option>
        <option value="failure">failures</option>
      </select>
      <div className="flex items-center gap-1.5 text-zinc-500">
        length {filterInput("minLen", "min length")} – {filterInput("maxLen", "max length")}
      </div>
      <div className="flex items-center gap-1.5 text-zinc-500">
        return {filterInput("minR", "min return")} – {filterInput("maxR", "max return")}
      </div>
      <label className="flex items-center gap-2">
        <input
          type="checkbox"
          checked={mixedOnly}
          onChange={(e) => set({ mixed: e.target.checked ? "1" : undefined, group: undefined, traj: undefined, turn: undefined })}
          className="accent-indigo-600"
        />
        groups with mixed outcomes only
      </label>
    </fieldset>
  );
}

function GroupList({ st }: { st: BrowserState }) {
  const { groups, shownGroups, groupId, set } = st;
  return (
    <div className={cardCls}>
      <div className={`border-b border-zinc-200 px-3 py-2 dark:border-zinc-800 ${labelCls}`}>Task groups {groups ? `(${shownGroups.length})` : ""}</div>
      <ul className="max-h-[28rem] overflow-auto p-1">
        {shownGroups.map((x) => (
          <li key={x.id}>
            <button
              type="button"
              onClick={() => set({ group: x.id, traj: undefined, turn: undefined })}
              aria-current={x.id === groupId}
              data-testid="group-item"
              data-success-rate={x.successRate}
              className={`flex w-full items-center justify-between rounded px-2 py-1 text-left text-sm ${x.id === groupId ? "bg-indigo-50 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-200" : "hover:bg-zinc-100 dark:hover:bg-zinc-800"}`}
            >
              <span className="truncate font-mono text-xs">{x.uid}</span>
              <span className="text-xs tabular-nums text-zinc-500">{Math.round(x.successRate * 100)} %</span>
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The group's name and counts, the estimator shown, the link to its heatmap, and the token tint. */
function GroupHeader({ runId, st, g }: { runId: string; st: BrowserState; g: GroupCredit }) {
  const { rows, est, pRaw, tokens, hasTokens, tint, set } = st;
  return (
    <div className="flex flex-wrap items-center gap-3 text-sm">
      <span className="font-medium">{g.group.uid}</span>
      <span className="text-zinc-500">
        showing {rows.length} of {g.trajectories.length} trajectories
      </span>
      {est ? (
        <span className="rounded bg-indigo-50 px-1.5 text-xs text-indigo-800 dark:bg-indigo-950 dark:text-indigo-200">advantages under {est} (recomputed)</span>
      ) : null}
      <Link
        className="text-indigo-600 hover:underline dark:text-indigo-400"
        href={`/runs/${runId}/credit/group?step=${g.step}&group=${g.group.id}${est ? `&est=${est}` : ""}${pRaw ? `&p=${encodeURIComponent(pRaw)}` : ""}`}
      >
        Credit heatmap of this group →
      </Link>
      <TaskTimelineLink
        runId={runId}
        step={g.step}
        steps={st.steps?.steps.map((s) => s.step) ?? []}
        uid={g.group.uid}
        prompt={st.traj?.id === st.trajId ? st.traj?.turns[0]?.observation : undefined}
        trajId={st.trajId}
      />
      <label className="ml-auto flex items-center gap-1.5 text-xs" title={tokenNote(hasTokens)}>
        <input type="checkbox" checked={tokens} onChange={(e) => set({ tokens: e.target.checked ? undefined : "0" })} className="accent-indigo-600" />
        tint action tokens by
      </label>
      <select
        className={`${inputCls} py-0.5 text-xs`}
        aria-label="Tint tokens by"
        value={tint}
        disabled={!tokens}
        onChange={(e) => set({ tint: e.target.value === "advantage" ? undefined : e.target.value })}
      >
        <option value="advantage">advantage</option>
        <option value="logprob" disabled={!hasTokens}>
          log-prob{hasTokens ? "" : " (no token data)"}
        </option>
        <option value="entropy" disabled={!hasTokens}>
          entropy{hasTokens ? "" : " (no token data)"}
        </option>
      </select>
    </div>
  );
}

function TurnsPanel({ st, theme }: { st: BrowserState; theme: "light" | "dark" }) {
  const { traj, trajId, turnParam, max, tint, tintMax, tokens, r, selRow, rows, g, trajError } = st;
  if (traj && traj.id === trajId)
    return (
      <TurnList
        turns={traj.turns}
        highlight={turnParam}
        max={max}
        tint={tint}
        tintMax={tintMax}
        theme={theme}
        tokens={tokens}
        recomputed={r && selRow >= 0 ? { label: `under ${r.estimator}`, values: r.advantages[selRow] } : null}
      />
    );
  if (rows.length === 0 && g) return <p className="text-sm text-zinc-500">No trajectory of this group matches the filters.</p>;
  if (trajError) return <p className="text-sm text-red-600">{trajError.message}</p>;
  if (trajId)
    return (
      <p className="text-sm text-zinc-500" data-testid="turns-loading">
        Loading the turns…
      </p>
    );
  return <p className="text-sm text-zinc-500">Select a trajectory.</p>;
}

/** The group's trajectories as columns, their turns as rows: action, reward and advantage (tinted) at a glance. */
function SideBySide({
  g,
  values,
  rows,
  trajId,
  turn,
  max,
  theme,
  onPick,
}: {
  g: GroupCredit;
  values: (number | null)[][];
  rows: { t: GroupCredit["trajectories"][number]; row: number }[];
  trajId?: string;
  turn: number | null;
  max: number;
  theme: "light" | "dark";
  onPick: (trajId: string, turn?: number) => void;
}) {
  const longest = rows.reduce((a, x) => Math.max(a, g.advantages[x.row]?.length ?? 0), 0);
  return (
    <div
      className="max-h-[22rem] overflow-auto rounded-lg border border-zinc-200 dark:border-zinc-800"
      role="tablist"
      aria-label="Trajectories of the group, side by side"
    >
      <div className="grid w-max" style={{ gridTemplateColumns: `2.5rem repeat(${rows.length}, 11rem)` }}>
        <div className="sticky left-0 top-0 z-20 bg-zinc-50 dark:bg-zinc-900" />
        {rows.map(({ t }) => (
          <button
            type="button"
            key={t.id}
            role="tab"
            aria-selected={t.id === trajId}
            onClick={() => onPick(t.id)}
            data-testid="trajectory-tab"
            className={`sticky top-0 z-10 border-b border-l px-2 py-1.5 text-left text-xs ${t.id === trajId ? "border-b-indigo-500 bg-indigo-50 dark:bg-indigo-950" : "border-zinc-200 bg-zinc-50 hover:bg-zinc-100 dark:border-zinc-800 dark:bg-zinc-900 dark:hover:bg-zinc-800"}`}
          >
            <div className="font-medium">
              #{t.index} {t.success ? <span className="text-emerald-600">✓ success</span> : <span className="text-zinc-500">✗</span>}
            </div>
            <div className="tabular-nums text-zinc-500">
              R {t.reward.toFixed(2)} · {t.length} turns{t.truncated ? " · truncated" : ""}
            </div>
          </button>
        ))}
        {Array.from({ length: longest }, (_, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: turn rows: row i is turn i of every trajectory
          <div key={i} className="contents">
            <div className="sticky left-0 z-10 border-t border-zinc-200 bg-zinc-50 px-1 py-1 text-right text-[11px] tabular-nums text-zinc-500 dark:border-zinc-800 dark:bg-zinc-900">
              t{i + 1}
            </div>
            {rows.map(({ t, row }) => {
              const text = g.texts[row]?.[i];
              if (!text) return <div key={t.id} className="border-l border-t border-zinc-100 dark:border-zinc-800" />;
              const v = values[row]?.[i] ?? null;
              const bg = divergingColor(v, max, theme);
              const on = t.id === trajId && turn === i;
              return (
                <button
                  type="button"
                  key={t.id}
                  onClick={() => onPick(t.id, i)}
                  title={`${text.action}\nadvantage ${fmtSigned(v)}`}
                  className={`border-l border-t border-zinc-100 px-1.5 py-1 text-left text-[11px] leading-tight dark:border-zinc-800 ${on ? "outline-2 -outline-offset-2 outline-indigo-500" : ""}`}
                  style={{ background: bg ?? undefined, color: v === null ? undefined : textOn(v, max, theme) }}
                >
                  <div className="truncate font-mono">
                    {g.valid[row][i] ? "" : "⚠ "}
                    {text.action.replace(/\s+/g, " ").slice(0, 40)}
                  </div>
                  <div className="tabular-nums opacity-80">
                    r {fmt(g.rewards[row][i])} · A {fmtSigned(v, 2)}
                  </div>
                </button>
              );
            })}
          </div>
        ))}
      </div>
    </div>
  );
}
