"use client";
// Credit over training: a heatmap of training step x turn index coloured by the mean (or mean
// absolute) advantage, and the batch diagnostics over time users debug with (singleton ratio,
// zero-variance share, advantage mean and std). Stored advantages or any recomputed estimator.
import { useRouter } from "next/navigation";
import { useMemo } from "react";
import { useQuery } from "@tanstack/react-query";
import { creditOverviewQuery } from "@/lib/queries";
import { symmetricMax } from "@/lib/charts/diverging";
import { fmt, fmtSigned } from "@/lib/charts/format";
import { creditSourceFromUrl, type CreditOverview, type StepDiagnostics } from "@/lib/schemas/credit";
import { Heatmap, type Cell } from "@/components/charts/heatmap";
import { StepLineChart } from "@/components/charts/step-line-chart";
import { DivergingLegend } from "@/components/charts/diverging-legend";
import { useTheme } from "@/components/ui/use-theme";
import { useUrlState } from "@/components/ui/use-url-state";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { RunCrumbs } from "@/components/runs/run-crumbs";
import { EstimatorPicker } from "./estimator-picker";
import { TurnDiagnosticsView } from "./turn-diagnostics-view";
import type { EstimatorInfo } from "@/lib/schemas/credit";

/** Diagnostics that are shares (drawn on [0, 1]). */
const SHARES = new Set<keyof StepDiagnostics>([
  "nonZeroShare",
  "zeroVarianceShare",
  "singletonRatio",
  "allSuccessShare",
  "allFailShare",
  "mixedShare",
  "collapseAccuracy",
  "collapseChance",
]);

type Series = { k: keyof StepDiagnostics; name: string; color: string; dashed?: boolean };
const TEAL = "#0d9488";

/** The field's failure signals, each with how to read it. */
const READINGS: { id: string; label: string; help: string; series: Series[] }[] = [
  {
    id: "outcomes",
    label: "group outcomes",
    help: "only mixed groups carry an outcome signal to group-relative estimators; all-success and all-fail groups give none",
    series: [
      { k: "mixedShare", name: "mixed", color: TEAL },
      { k: "allSuccessShare", name: "all succeed", color: "#2563eb" },
      { k: "allFailShare", name: "all fail", color: "#dc2626" },
    ],
  },
  {
    id: "rewardVariance",
    label: "within-group reward variance",
    help: "falling while the zero-variance share rises: groups stop telling trajectories apart (RAGEN's Echo Trap)",
    series: [{ k: "rewardVariance", name: "variance", color: TEAL }],
  },
  {
    id: "collapse",
    label: "template collapse probe",
    help: "share of trajectories whose actions retrieve their own task among the step's (TF-IDF); near the dashed chance line the outputs no longer depend on the input, whatever the entropy says",
    series: [
      { k: "collapseAccuracy", name: "retrieval accuracy", color: TEAL },
      { k: "collapseChance", name: "chance", color: "#71717a", dashed: true },
    ],
  },
];

const DIAGS: [keyof StepDiagnostics, string, string][] = [
  ["advMean", "advantage mean", "batch mean over turns; drifts from 0 when groups differ in length"],
  ["advStd", "advantage std", "spread of the advantages (N-1)"],
  ["advMeanAbs", "mean |advantage|", "how much credit is handed out at all"],
  ["nonZeroShare", "non-zero share", "share of turns with a non-zero advantage"],
  ["zeroVarianceShare", "zero-variance share", "task groups whose G outcomes are all equal: no outcome signal"],
  ["singletonRatio", "singleton ratio", "GiGPO anchor groups with one member (A_S = 0)"],
  ["meanAnchorGroupSize", "mean anchor-group size", "turns per anchor group"],
];

export function CreditOverviewView({ runId, catalog }: { runId: string; catalog: EstimatorInfo[] }) {
  const router = useRouter();
  const theme = useTheme();
  const { get, set } = useUrlState();
  const est = get("est") ?? undefined;
  const pRaw = get("p");
  const source = useMemo(() => creditSourceFromUrl(est, pRaw), [est, pRaw]);
  const agg = get("agg") === "abs" ? "abs" : "mean";
  const maxSteps = Number(get("steps") ?? 50) || 50;
  const { data, error, isFetching } = useQuery(creditOverviewQuery(runId, source, maxSteps));
  const values = data ? (agg === "abs" ? data.meanAbs : data.mean) : null;
  const max = useMemo(() => symmetricMax((values ?? []).flat()), [values]);
  const tip = (c: Cell) => (data ? <OverviewTip d={data} c={c} /> : null);
  const open = (c: Cell) =>
    data && router.push(`/runs/${runId}/credit/group?step=${data.steps[c.row]}${est ? `&est=${est}` : ""}${pRaw ? `&p=${encodeURIComponent(pRaw)}` : ""}`);
  const empty = data && data.steps.length === 0;
  const noStored = data && data.source === "stored" && data.diagnostics.every((d) => d.advMean === null);

  return (
    <div className="space-y-4">
      <RunCrumbs runId={runId} section="credit" active="credit" />
      <div className={`${cardCls} space-y-3 p-3`}>
        <EstimatorPicker
          id="ov"
          label="Advantages"
          catalog={catalog}
          trained={data?.trainedEstimators.join(", ") || null}
          value={source.estimator ? source : {}}
          shownParams={null}
          onChange={(v) => set({ est: v?.estimator, p: v?.params ? JSON.stringify(v.params) : undefined })}
        />
        <div className="flex flex-wrap items-center gap-4 text-sm">
          <label className="flex items-center gap-2">
            <span className="text-zinc-500">Colour</span>
            <select className={inputCls} value={agg} onChange={(e) => set({ agg: e.target.value === "abs" ? "abs" : undefined })} aria-label="Aggregate">
              <option value="mean">mean advantage</option>
              <option value="abs">mean |advantage|</option>
            </select>
          </label>
          <label className="flex items-center gap-2">
            <span className="text-zinc-500">Steps shown</span>
            <select
              className={inputCls}
              value={maxSteps}
              onChange={(e) => set({ steps: e.target.value === "50" ? undefined : e.target.value })}
              aria-label="Steps shown"
            >
              {[25, 50, 100, 200, 500].map((n) => (
                <option key={n} value={n}>
                  at most {n}
                </option>
              ))}
            </select>
          </label>
          {data ? (
            <span className="text-zinc-500">
              {data.steps.length} of {data.totalSteps} steps{data.steps.length < data.totalSteps ? " (evenly sampled)" : ""}
            </span>
          ) : null}
          {isFetching ? <span className="text-zinc-500">computing…</span> : null}
        </div>
      </div>
      {error ? (
        <p className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
          {error.message}
        </p>
      ) : null}
      {empty ? <p className="text-sm text-zinc-500">No rollouts stored for this run yet.</p> : null}
      {noStored ? (
        <p className="rounded-md bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200">
          No advantages are stored with these steps. Choose an estimator to see what it would assign.
        </p>
      ) : null}
      {data && values && !empty ? (
        <section className={`${cardCls} space-y-2 p-3`} aria-label="Credit over training">
          <div className="flex flex-wrap items-end justify-between gap-3">
            <h2 className="text-sm font-medium">
              {agg === "abs" ? "Mean |advantage|" : "Mean advantage"} by training step (rows) and turn index (columns) —{" "}
              {data.source === "stored" ? `stored (${data.trainedEstimators.join(", ") || "none"})` : `${data.estimator}, recomputed`}
            </h2>
            <DivergingLegend max={max} theme={theme} label={agg === "abs" ? "mean |A|" : "mean A"} />
          </div>
          <Heatmap
            values={values}
            max={max}
            theme={theme}
            rowLabels={data.steps.map((s) => `step ${s}`)}
            renderTooltip={tip}
            onActivate={open}
            describe={(c) => `step ${data.steps[c.row]}, turn ${c.col + 1}: ${fmtSigned(values[c.row][c.col])}`}
            ariaLabel="Mean advantage by training step and turn index"
            testId="overview-heatmap"
            maxCellWidth={40}
            dataAttrs={{ "data-source": data.source }}
          />
          <p className="text-xs text-zinc-500">Click a row to open that step&apos;s task groups as heatmaps.</p>
        </section>
      ) : null}
      {data && !empty && !noStored ? <TurnDiagnosticsView d={data} /> : null}
      {data && !empty && !noStored && data.byLength.lengths.length > 0 ? (
        <LengthBias d={data} max={symmetricMax(data.byLength.mean.flat())} theme={theme} />
      ) : null}
      {data && !empty ? (
        <section aria-labelledby="signals-h" className="space-y-2">
          <h2 id="signals-h" className={labelCls}>
            Collapse and signal over training
          </h2>
          <div className="grid gap-3 sm:grid-cols-2 xl:grid-cols-3">
            {READINGS.map((r) => (
              <DiagChart key={r.id} id={r.id} d={data} series={r.series} label={r.label} help={r.help} />
            ))}
          </div>
        </section>
      ) : null}
      {data && !empty ? (
        <section aria-labelledby="diag-over-h" className="space-y-2">
          <h2 id="diag-over-h" className={labelCls}>
            Batch diagnostics over training
          </h2>
          <div className="grid gap-3 sm:grid-cols-2 xl:grid-cols-3">
            {DIAGS.map(([k, label, help]) => (
              <DiagChart key={k} id={k} d={data} series={[{ k, name: label, color: TEAL }]} label={label} help={help} />
            ))}
          </div>
        </section>
      ) : null}
    </div>
  );
}

function OverviewTip({ d, c }: { d: CreditOverview; c: Cell }) {
  const diag = d.diagnostics[c.row];
  return (
    <div className="space-y-1 tabular-nums">
      <div className="font-medium">
        step {d.steps[c.row]} · turn {c.col + 1}
      </div>
      <div>
        mean A <b>{fmtSigned(d.mean[c.row][c.col])}</b> · mean |A| {fmt(d.meanAbs[c.row][c.col])}
      </div>
      <div className="text-zinc-500">
        {d.count[c.row][c.col]} turns at this index · batch: {diag.turns} turns, {diag.trajectories} trajectories
      </div>
      <div className="text-zinc-500">
        batch A mean {fmtSigned(diag.advMean)} · std {fmt(diag.advStd)} · zero-var{" "}
        {diag.zeroVarianceShare === null ? "—" : `${Math.round(diag.zeroVarianceShare * 100)}%`}
      </div>
    </div>
  );
}

/** Mean advantage by step and episode length: the length bias of an estimator. */
function LengthBias({ d, max, theme }: { d: CreditOverview; max: number; theme: ReturnType<typeof useTheme> }) {
  const { lengths, mean } = d.byLength;
  return (
    <section className={`${cardCls} space-y-2 p-3`} aria-label="Advantage by episode length">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <h2 className="text-sm font-medium">
          Mean advantage by training step (rows) and episode length (columns){" "}
          <span className="font-normal text-zinc-500">
            · a colour that drifts with length: short and long episodes are credited differently (normalising by turn index is biased when lengths differ)
          </span>
        </h2>
        <DivergingLegend max={max} theme={theme} label="mean A" />
      </div>
      <Heatmap
        values={mean}
        max={max}
        theme={theme}
        rowLabels={d.steps.map((s) => `step ${s}`)}
        colLabel={(c) => String(lengths[c])}
        describe={(c) => `step ${d.steps[c.row]}, episodes of ${lengths[c.col]} turns: ${fmtSigned(mean[c.row][c.col])}`}
        ariaLabel="Mean advantage by training step and episode length"
        testId="length-heatmap"
        maxCellWidth={40}
      />
    </section>
  );
}

function DiagChart({ id, d, series, label, help }: { id: string; d: CreditOverview; series: Series[]; label: string; help: string }) {
  const rows = d.diagnostics.map((x) => Object.fromEntries([["step", x.step], ...series.map((s) => [s.k, x[s.k] as number | null])]));
  const lines = series.map((s) => ({ key: s.k, name: s.name, color: s.color, dashed: s.dashed }));
  // shares on their whole range [0, 1]; other diagnostics on a padded round domain
  return <StepLineChart rows={rows} lines={lines} label={label} help={help} testId={`diag-${id}`} shares={series.every((s) => SHARES.has(s.k))} legend />;
}
