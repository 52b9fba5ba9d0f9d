"use client";
// Credit heatmap of one task group: rows are the G trajectories, columns their turns, colour the
// advantage on a diverging scale centred at zero. The stored advantages (as trained) by default;
// any lib/credit estimator recomputed on the server; a second estimator side by side or as a
// difference; GiGPO anchor groups as shared markers; hover shows the turn; click opens it.
// Every choice lives in the URL.
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useMemo } from "react";
import { useQuery } from "@tanstack/react-query";
import { groupCreditQuery, trajectoryQuery } from "@/lib/queries";
import { anchorGroups, anchorSummary, defaultGroup, diffMatrix, type AnchorGroup, type Matrix } from "@/lib/charts/prepare-heatmap";
import { symmetricMax } from "@/lib/charts/diverging";
import { fmt, fmtSigned } from "@/lib/charts/format";
import { creditSourceFromUrl, type CreditSource, type GroupCredit } from "@/lib/schemas/credit";
import { Heatmap, MarkerIcon, type Cell } from "@/components/charts/heatmap";
import { DivergingLegend } from "@/components/charts/diverging-legend";
import { useTheme } from "@/components/ui/use-theme";
import { useUrlState } from "@/components/ui/use-url-state";
import { btnCls, cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { RunCrumbs } from "@/components/runs/run-crumbs";
import { EstimatorPicker } from "./estimator-picker";
import type { EstimatorInfo } from "@/lib/schemas/credit";
import { useStepGroups } from "@/components/runs/use-step-groups";

/** URL keys of a source: est/p for A, cmp/cp for B ("stored" or an estimator id). */
function useSource(estKey: string, pKey: string): CreditSource | null {
  const { get } = useUrlState();
  const est = get(estKey);
  const p = get(pKey);
  return useMemo(() => {
    if (estKey === "cmp" && !est) return null;
    return creditSourceFromUrl(est, p);
  }, [est, p, estKey]);
}

const sourceLabel = (d: GroupCredit | undefined, s: CreditSource | null) =>
  !s ? "" : s.estimator ? `${s.estimator} (recomputed)` : `stored${d?.trained.estimator ? ` (${d.trained.estimator}, as trained)` : ""}`;

/** The view's state, all of it in the URL: step, group, sources A and B, comparison view, scale, markers. */
function useGroupCredit(runId: string) {
  const { get, set, steps, step, groups } = useStepGroups(runId);
  // default: the first group with mixed outcomes (an all-success or all-fail group has no outcome signal)
  const groupId = get("group") ?? defaultGroup(groups?.groups)?.id;
  const a = useSource("est", "p");
  const b = useSource("cmp", "cp");
  const view: HeatmapView = b ? (get("view") === "diff" ? "diff" : "side") : "single";
  const ready = step !== undefined && !!groupId;
  const qa = useQuery({ ...groupCreditQuery(runId, step ?? -1, groupId ?? "", a ?? {}), enabled: ready });
  const qb = useQuery({ ...groupCreditQuery(runId, step ?? -1, groupId ?? "", b ?? {}), enabled: ready && !!b });
  const da = qa.data && qa.data.group.id === groupId && qa.data.step === step ? qa.data : undefined;
  const db = b && qb.data && qb.data.group.id === groupId && qb.data.step === step ? qb.data : undefined;
  const setSource = (which: "a" | "b", v: CreditSource | null) => {
    const [ek, pk] = which === "a" ? ["est", "p"] : ["cmp", "cp"];
    if (v === null) return set({ [ek]: undefined, [pk]: undefined, view: undefined });
    set({ [ek]: v.estimator ?? (which === "b" ? "stored" : undefined), [pk]: v.params ? JSON.stringify(v.params) : undefined });
  };
  const err = qa.error ?? (b ? qb.error : null);
  return { get, set, steps, step, groups, groupId, a, b, view, ready, da, db, setSource, err };
}
type GroupCreditState = ReturnType<typeof useGroupCredit>;
type HeatmapView = "single" | "side" | "diff";

export function GroupHeatmapView({ runId, catalog }: { runId: string; catalog: EstimatorInfo[] }) {
  const st = useGroupCredit(runId);
  const { da, db, err, ready } = st;
  const allMissing = da && da.source === "stored" && da.advantages.every((r) => r.every((v) => v === null));
  return (
    <div className="space-y-4">
      <RunCrumbs runId={runId} section="credit heatmap" active="credit" />
      <div className={`${cardCls} space-y-3 p-3`}>
        <GroupPicker runId={runId} st={st} />
        {st.steps && st.steps.steps.length === 0 ? <p className="text-sm text-zinc-500">No rollouts stored for this run yet.</p> : null}
        <SourcePickers st={st} catalog={catalog} />
      </div>
      {err ? (
        <p className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
          {err.message}
        </p>
      ) : null}
      {!da && !err && ready ? <p className="text-sm text-zinc-500">Loading the group…</p> : null}
      {allMissing ? (
        <p className="rounded-md bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200">
          No advantages are stored for this step (an evaluation batch, or the trainer did not send them). Choose an estimator above to see what it would assign.
        </p>
      ) : null}
      {da ? <HeatmapSection runId={runId} st={st} da={da} db={db} /> : null}
      {da ? (
        <div className="grid gap-4 lg:grid-cols-2">
          <AnchorTable d={da} anchors={groupsOf(da)} />
          <Diagnostics d={da} b={db} />
        </div>
      ) : null}
    </div>
  );
}

/** Step and task group selects, previous/next group, and the link to the group's trajectories. */
function GroupPicker({ runId, st }: { runId: string; st: GroupCreditState }) {
  const { set, steps, step, groups, groupId, da } = st;
  const groupIndex = groups?.groups.findIndex((g) => g.id === groupId) ?? -1;
  return (
    <div className="flex flex-wrap items-center gap-3">
      <label className="flex items-center gap-2 text-sm">
        <span className="text-zinc-500">Step</span>
        <select className={inputCls} value={step ?? ""} aria-label="Training step" onChange={(e) => set({ step: e.target.value, group: undefined })}>
          {steps?.steps.map((s) => (
            <option key={s.id} value={s.step}>
              step {s.step}
              {s.estimator ? ` · ${s.estimator}` : ""}
            </option>
          ))}
        </select>
      </label>
      <label className="flex items-center gap-2 text-sm">
        <span className="text-zinc-500">Task group</span>
        <select className={`${inputCls} max-w-72`} value={groupId ?? ""} aria-label="Task group" onChange={(e) => set({ group: e.target.value })}>
          {groups?.groups.map((g) => (
            <option key={g.id} value={g.id}>
              {g.uid} · {g.trajectories} traj · {Math.round(g.successRate * 100)}% success · R̄ {fmt(g.meanReward)}
            </option>
          ))}
        </select>
      </label>
      <div className="flex gap-1">
        <button
          type="button"
          className={btnCls}
          disabled={groupIndex <= 0}
          onClick={() => set({ group: groups!.groups[groupIndex - 1].id })}
          aria-label="Previous group"
        >
          ←
        </button>
        <button
          type="button"
          className={btnCls}
          disabled={!groups || groupIndex >= groups.groups.length - 1}
          onClick={() => set({ group: groups!.groups[groupIndex + 1].id })}
          aria-label="Next group"
        >
          →
        </button>
      </div>
      {da ? (
        <Link
          className="ml-auto text-sm text-indigo-600 hover:underline dark:text-indigo-400"
          href={`/runs/${runId}/trajectories?step=${da.step}&group=${da.group.id}`}
        >
          Read this group&apos;s trajectories →
        </Link>
      ) : null}
    </div>
  );
}

/** Source A (stored or an estimator), source B to compare with, and how B is shown. */
function SourcePickers({ st, catalog }: { st: GroupCreditState; catalog: EstimatorInfo[] }) {
  const { a, b, da, db, view, set, setSource } = st;
  return (
    <>
      <EstimatorPicker
        id="pa"
        label="Advantages"
        catalog={catalog}
        trained={da?.trained.estimator ?? null}
        value={a}
        shownParams={da?.source === "recomputed" ? da.params : null}
        fieldsAny={da?.fieldsAny}
        onChange={(v) => setSource("a", v ?? {})}
      />
      <div className="flex flex-wrap items-start gap-3">
        <EstimatorPicker
          id="pb"
          label="Compare with"
          catalog={catalog}
          trained={da?.trained.estimator ?? null}
          value={b}
          shownParams={db?.source === "recomputed" ? db.params : null}
          fieldsAny={da?.fieldsAny}
          onChange={(v) => setSource("b", v)}
          allowNone
        />
        {b ? (
          <div className="flex items-center gap-1 text-sm" role="radiogroup" aria-label="Comparison view">
            {(["side", "diff"] as const).map((v) => (
              // biome-ignore lint/a11y/useSemanticElements: a segmented control: buttons as the radios of a radiogroup (the ARIA radio group pattern)
              <button
                type="button"
                key={v}
                role="radio"
                aria-checked={view === v}
                className={`${btnCls} ${view === v ? "bg-zinc-100 font-medium dark:bg-zinc-800" : ""}`}
                onClick={() => set({ view: v === "side" ? undefined : v })}
              >
                {v === "side" ? "side by side" : "difference (A − B)"}
              </button>
            ))}
          </div>
        ) : null}
      </div>
    </>
  );
}

/** The heatmap card: A alone, A and B side by side, or A − B; anchor markers; colour scale. */
function HeatmapSection({ runId, st, da, db }: { runId: string; st: GroupCreditState; da: GroupCredit; db: GroupCredit | undefined }) {
  const router = useRouter();
  const theme = useTheme();
  const { get, set, a, b, view } = st;
  const clip = get("scale") === "p98";
  const showMarkers = get("markers") !== "0";
  const shown: Matrix = view === "diff" && db ? diffMatrix(da.advantages, db.advantages) : da.advantages;
  const max = useMemo(() => {
    const vals: (number | null)[] = [];
    for (const r of shown) vals.push(...r);
    if (view === "side" && db) for (const r of db.advantages) vals.push(...r);
    return symmetricMax(vals, clip ? 98 : undefined);
  }, [shown, db, view, clip]);
  const anchors = useMemo(() => groupsOf(da), [da]);
  const markerOf = useMemo(() => (showMarkers ? markerMatrix(da, anchors) : undefined), [da, anchors, showMarkers]);
  const related = (c: Cell) => {
    const id = da.anchorGroup[c.row]?.[c.col] ?? null;
    const g = id === null ? undefined : anchors[id];
    return g && g.members.length > 1 ? g.members : [];
  };
  const openTurn = (c: Cell) => {
    const t = da.trajectories[c.row];
    const q = new URLSearchParams({ step: String(da.step), group: da.group.id, traj: t.id, turn: String(c.col) });
    if (a?.estimator) q.set("est", a.estimator);
    if (a?.params) q.set("p", JSON.stringify(a.params));
    router.push(`/runs/${runId}/trajectories?${q}`);
  };
  const describe = (c: Cell) =>
    `trajectory ${da.trajectories[c.row]?.index}, turn ${c.col + 1}: ${view === "diff" ? "difference" : "advantage"} ${fmtSigned(shown[c.row]?.[c.col] ?? null)}`;
  const common = {
    max,
    theme,
    rowLabels: da.trajectories.map((t) => `#${t.index} ${t.success ? "✓" : "✗"} ${fmt(t.reward)}`),
    markers: markerOf,
    related,
    describe,
    open: openTurn,
  };
  return (
    <section className={`${cardCls} space-y-3 p-3`} aria-label="Credit heatmap">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <div className="text-sm">
          <span className="font-medium">{da.group.uid}</span>
          <span className="text-zinc-500">
            {" "}
            · step {da.step} · {da.trajectories.length} trajectories · rows: trajectory # (✓ success) return · columns: turn
          </span>
          {da.source === "recomputed" ? (
            <span className="text-zinc-500"> · recomputed over the whole step batch ({da.diagnostics?.counts.groups} groups)</span>
          ) : null}
        </div>
        <div className="flex items-center gap-3">
          <label className="flex items-center gap-1.5 text-xs">
            <input type="checkbox" checked={showMarkers} onChange={(e) => set({ markers: e.target.checked ? undefined : "0" })} className="accent-indigo-600" />
            anchor markers
          </label>
          <label className="flex items-center gap-1.5 text-xs">
            <input type="checkbox" checked={clip} onChange={(e) => set({ scale: e.target.checked ? "p98" : undefined })} className="accent-indigo-600" />
            clip colours at the 98th percentile
          </label>
          <DivergingLegend max={max} theme={theme} label={view === "diff" ? "A − B" : "advantage"} clipped={clip} />
        </div>
      </div>
      {view === "side" && db ? (
        <div className="grid gap-4 xl:grid-cols-2">
          <HeatmapPanel
            {...common}
            view="side"
            title={`A: ${sourceLabel(da, a)}`}
            testId="heatmap-a"
            data={da}
            values={da.advantages}
            tooltip={(c) => <CellTip d={da} b={db} c={c} view={view} anchors={anchors} />}
          />
          <HeatmapPanel
            {...common}
            view="side"
            title={`B: ${sourceLabel(db, b)}`}
            testId="heatmap-b"
            data={db}
            values={db.advantages}
            tooltip={(c) => <CellTip d={da} b={db} c={c} view="side" anchors={anchors} />}
          />
        </div>
      ) : (
        <HeatmapPanel
          {...common}
          view={view}
          title={view === "diff" ? `A − B: ${sourceLabel(da, a)} minus ${sourceLabel(db, b)}` : sourceLabel(da, a)}
          testId="heatmap-a"
          data={da}
          values={shown}
          tooltip={(c) => <CellTip d={da} b={db} c={c} view={view} anchors={anchors} />}
        />
      )}
      <p className="text-xs text-zinc-500">
        <MarkerIcon marker={0} /> cells with the same marker share a GiGPO anchor group (same state in this task group); hover outlines the group. Hatched: no
        value. Click a cell (or Enter) to read the turn.
      </p>
    </section>
  );
}

function HeatmapPanel(p: {
  title: string;
  view: string;
  testId: string;
  data: GroupCredit;
  values: Matrix;
  max: number;
  theme: "light" | "dark";
  rowLabels: string[];
  markers?: (number | null)[][];
  related: (c: Cell) => Cell[];
  tooltip: (c: Cell) => React.ReactNode;
  describe: (c: Cell) => string;
  open: (c: Cell) => void;
}) {
  return (
    <div className="min-w-0">
      <h3 className="mb-1 text-sm font-medium">{p.title}</h3>
      <Heatmap
        values={p.values}
        max={p.max}
        theme={p.theme}
        rowLabels={p.rowLabels}
        markers={p.markers}
        related={p.related}
        renderTooltip={p.tooltip}
        describe={p.describe}
        onActivate={p.open}
        ariaLabel={`Advantage heatmap: ${p.title}`}
        testId={p.testId}
        dataAttrs={{
          "data-source": p.data.source,
          "data-estimator": p.data.estimator ?? "",
          "data-step": String(p.data.step),
          "data-group": p.data.group.id,
          "data-view": p.view,
        }}
      />
    </div>
  );
}

/** Anchor groups with per-member statistics of the advantage, reward, and GiGPO's return / A_S / A_E when recomputed. */
function groupsOf(d: GroupCredit): AnchorGroup[] {
  const extra: Record<string, Matrix> = { reward: d.rewards };
  for (const [k, name] of [
    ["return", "G_t"],
    ["step", "A_S"],
    ["episode", "A_E"],
  ] as const) {
    const m = d.components[k];
    if (m) extra[name] = m.map((r) => r.map((v) => (typeof v === "number" ? v : null)));
  }
  return anchorGroups(d.anchorGroup, d.advantages, extra);
}

function markerMatrix(d: GroupCredit, groups: AnchorGroup[]): (number | null)[][] {
  return d.anchorGroup.map((r) => r.map((id) => (id === null ? null : (groups[id]?.marker ?? null))));
}

const statLine = (s: { mean: number; std: number; n: number } | null | undefined) => (s ? `${fmtSigned(s.mean)} ± ${fmt(s.std)}` : "—");

/** A long text's start and end (what fits a tooltip). */
function excerpt(s: string, head: number, tail: number): string {
  if (s.length <= head + tail + 40) return s;
  return tail ? `${s.slice(0, head)}\n…\n${s.slice(-tail)}` : `${s.slice(0, head)} …`;
}

function CellTip({ d, b, c, view, anchors }: { d: GroupCredit; b?: GroupCredit; c: Cell; view: string; anchors: AnchorGroup[] }) {
  const t = d.trajectories[c.row];
  const va = d.advantages[c.row]?.[c.col] ?? null;
  const vb = b?.advantages[c.row]?.[c.col] ?? null;
  const id = d.anchorGroup[c.row]?.[c.col] ?? null;
  const g = id === null ? undefined : anchors[id];
  const text = d.texts[c.row]?.[c.col];
  // the group's texts are short excerpts; the hovered trajectory's whole turns are loaded on demand (and kept)
  const cut = !!text && (text.observationLength > text.observation.length || text.actionLength > text.action.length);
  const full = useQuery({ ...trajectoryQuery(t.id), enabled: cut, staleTime: Infinity }).data?.turns[c.col];
  const comp = (k: string) => {
    const v = d.components[k]?.[c.row]?.[c.col];
    return typeof v === "number" ? v : null;
  };
  return (
    <div className="space-y-1.5">
      <div className="font-medium">
        Trajectory #{t.index} {t.success ? <span className="text-emerald-600">✓</span> : <span className="text-zinc-500">✗</span>} · turn {c.col + 1}
        <span className="font-normal text-zinc-500"> · return {fmt(t.reward)}</span>
      </div>
      <div className="grid grid-cols-[auto_1fr] gap-x-3 tabular-nums">
        <span className="text-zinc-500">A {b ? `(${d.estimator ?? "stored"})` : "advantage"}</span>
        <b>{fmtSigned(va)}</b>
        {b ? (
          <>
            <span className="text-zinc-500">B ({b.source === "stored" ? "stored" : b.estimator})</span>
            <b>{fmtSigned(vb)}</b>
            <span className="text-zinc-500">A − B</span>
            <b>{va !== null && vb !== null ? fmtSigned(va - vb) : "—"}</b>
          </>
        ) : null}
        {comp("episode") !== null ? (
          <>
            <span className="text-zinc-500">A_E · A_S</span>
            <span>
              {fmtSigned(comp("episode"))} · {fmtSigned(comp("step"))}
            </span>
          </>
        ) : null}
        <span className="text-zinc-500">reward</span>
        <span>
          {fmt(d.rewards[c.row]?.[c.col])} ·{" "}
          {d.valid[c.row]?.[c.col] ? <span className="text-emerald-600">valid</span> : <span className="text-red-600">invalid action</span>}
        </span>
      </div>
      {g ? (
        <div className="rounded bg-zinc-50 p-1.5 dark:bg-zinc-800/60">
          <div>
            {g.marker !== null ? <MarkerIcon marker={g.marker} /> : null} anchor group #{g.id}: <b>{g.members.length}</b> member
            {g.members.length === 1 ? " (singleton: A_S = 0)" : "s"}
          </div>
          {g.members.length > 1 ? (
            <>
              <div className="text-zinc-500">
                {g.members
                  .slice(0, 12)
                  .map((m) => `#${d.trajectories[m.row].index}·t${m.col + 1}`)
                  .join(", ")}
                {g.members.length > 12 ? ` … +${g.members.length - 12}` : ""}
              </div>
              <div className="tabular-nums">
                A mean ± std {statLine(g.advantage)}
                {g.extra.G_t ? <> · G_t {statLine(g.extra.G_t)}</> : null} · reward {statLine(g.extra.reward)}
              </div>
            </>
          ) : null}
        </div>
      ) : null}
      {text ? (
        <div className="space-y-1">
          <div>
            <span className="text-zinc-500">Action </span>
            <span className="whitespace-pre-wrap break-words font-mono">
              {full ? excerpt(full.action, 400, 0) : `${text.action}${text.actionLength > text.action.length ? " …" : ""}`}
            </span>
          </div>
          <pre className="max-h-32 overflow-hidden whitespace-pre-wrap break-words rounded bg-zinc-50 p-1 font-mono text-[11px] leading-tight dark:bg-zinc-950">
            {full ? excerpt(full.observation, 200, 450) : `${text.observation}${text.observationLength > text.observation.length ? " …" : ""}`}
          </pre>
        </div>
      ) : null}
      <div className="text-zinc-500">{view === "side" || view === "single" || view === "diff" ? "Click or Enter: open this turn" : ""}</div>
    </div>
  );
}

function AnchorTable({ d, anchors }: { d: GroupCredit; anchors: AnchorGroup[] }) {
  const sum = anchorSummary(anchors);
  const multi = anchors.filter((g) => g.members.length > 1).sort((x, y) => y.members.length - x.members.length);
  if (anchors.length === 0)
    return (
      <section className={`${cardCls} p-3 text-sm text-zinc-500`}>
        <h2 className={labelCls}>Anchor groups</h2>
        <p className="mt-2">The turns of this group carry no anchors (GiGPO needs them).</p>
      </section>
    );
  return (
    <section className={`${cardCls} p-3`} aria-labelledby="anchor-h">
      <h2 id="anchor-h" className={labelCls}>
        Anchor groups (GiGPO step groups){d.components.anchorGroup ? " — as the estimator grouped them" : " — equal anchors"}
      </h2>
      <p className="mt-1 text-sm">
        In this task group: {sum.count} anchor groups · singleton ratio <b data-testid="singleton-ratio">{(sum.singletonRatio * 100).toFixed(0)}%</b> · sizes{" "}
        {Object.entries(sum.sizes)
          .map(([k, v]) => `${k}×${v}`)
          .join(", ")}
      </p>
      <div className="mt-2 max-h-72 overflow-auto">
        <table className="w-full text-xs">
          <thead className="sticky top-0 bg-white text-left text-zinc-500 dark:bg-zinc-900">
            <tr>
              <th className="py-1">group</th>
              <th>size</th>
              <th>A mean ± std</th>
              {d.components.return ? <th>G_t mean ± std</th> : null}
              <th>anchor</th>
            </tr>
          </thead>
          <tbody>
            {multi.slice(0, 100).map((g) => (
              <tr key={g.id} className="border-t border-zinc-100 dark:border-zinc-800">
                <td className="py-1">
                  {g.marker !== null ? <MarkerIcon marker={g.marker} /> : null} #{g.id}
                </td>
                <td className="tabular-nums">{g.members.length}</td>
                <td className="tabular-nums">{statLine(g.advantage)}</td>
                {d.components.return ? <td className="tabular-nums">{statLine(g.extra.G_t)}</td> : null}
                <td className="max-w-48 truncate font-mono" title={d.anchorKeys[g.id]}>
                  {d.anchorKeys[g.id]}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {multi.length === 0 ? (
          <p className="text-sm text-zinc-500">Every anchor group is a singleton: GiGPO&apos;s step advantage is 0 everywhere in this group.</p>
        ) : null}
      </div>
    </section>
  );
}

function Diagnostics({ d, b }: { d: GroupCredit; b?: GroupCredit }) {
  const pct = (v: number | null) => (v === null ? "—" : `${(v * 100).toFixed(0)}%`);
  const rows = (x: GroupCredit): [string, string][] => {
    const s = x.stepDiagnostics;
    const a = x.diagnostics?.anchorGroups;
    return [
      ["advantage mean", fmtSigned(s.advMean)],
      ["advantage std", fmt(s.advStd)],
      ["mean |advantage|", fmt(s.advMeanAbs)],
      ["non-zero share", pct(s.nonZeroShare)],
      ["zero-variance groups", pct(s.zeroVarianceShare)],
      ["anchor singleton ratio", pct(s.singletonRatio)],
      ["mean anchor-group size", fmt(s.meanAnchorGroupSize)],
      ...(a ? ([["mean |A_S|", fmt(a.meanAbsStep)]] as [string, string][]) : []),
      ["turns · trajectories", `${s.turns} · ${s.trajectories}`],
    ];
  };
  const list = [d, b].filter((x): x is GroupCredit => !!x);
  const name = (x: GroupCredit) => (x.source === "stored" ? `stored (${x.trained.estimator ?? "none"})` : `${x.estimator}, recomputed`);
  return (
    <section className={`${cardCls} p-3`} aria-labelledby="diag-h">
      <h2 id="diag-h" className={labelCls}>
        Batch diagnostics (whole step {d.step})
      </h2>
      <div className={`mt-2 grid gap-4 ${list.length > 1 ? "sm:grid-cols-2" : ""}`}>
        {list.map((x, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: two fixed slots: this estimator, then the one compared with
          <dl key={i} className="grid grid-cols-[auto_1fr] content-start gap-x-3 gap-y-0.5 text-sm" data-testid="step-diagnostics">
            <dt className="col-span-2 font-medium">{name(x)}</dt>
            {rows(x).map(([k, v]) => (
              <div key={k} className="contents">
                <dt className="text-zinc-500">{k}</dt>
                <dd className="tabular-nums">{v}</dd>
              </div>
            ))}
          </dl>
        ))}
      </div>
      {d.source === "stored" && d.trainedDiagnostics ? (
        <details className="mt-3 text-sm">
          <summary className="cursor-pointer text-zinc-500">Diagnostics the trainer logged with this step</summary>
          <pre className="mt-1 max-h-48 overflow-auto rounded bg-zinc-50 p-2 font-mono text-xs dark:bg-zinc-950">
            {JSON.stringify(d.trainedDiagnostics, null, 2)}
          </pre>
        </details>
      ) : null}
    </section>
  );
}
