"use client";
// Turn-level diagnostics over training, next to credit over training: a training step x turn index
// heatmap of one chosen diagnostic (every turn its own column: a 50-turn episode is read turn by
// turn), then one line per early turn index (lib/charts/turn-diagnostics.ts) — its share of the
// step's |advantage|, its mean advantage, the share of trajectories that reach it, its entropy.
import { useMemo, useState } from "react";
import { TURN_LINES, turnDiagnostics, type TurnSeries, type TurnTable } from "@/lib/charts/turn-diagnostics";
import { colorAt } from "@/lib/charts/palette";
import { fmt, fmtSigned } from "@/lib/charts/format";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { Heatmap, type Cell } from "@/components/charts/heatmap";
import { StepLineChart } from "@/components/charts/step-line-chart";
import { DivergingLegend } from "@/components/charts/diverging-legend";
import { useTheme } from "@/components/ui/use-theme";
import { symmetricMax } from "@/lib/charts/diverging";
import { TURN_METRICS, turnGrid, type TurnMetric } from "./turn-grid";

const CHARTS: [keyof Omit<TurnSeries, "label">, string, string][] = [
  ["creditShare", "credit share by turn", "share of the step's |advantage| at this turn index: which turn gets the credit"],
  ["meanAdvantage", "mean advantage by turn", "mean advantage of the turns at this index"],
  ["reach", "trajectories reaching the turn", "share of the step's trajectories still running at this turn"],
  ["entropy", "token entropy by turn", "mean entropy of the policy over the turn's tokens (nats): a turn whose entropy falls to 0 has collapsed (GTR)"],
];

export function TurnDiagnosticsView({ d }: { d: TurnTable }) {
  const series = useMemo(() => turnDiagnostics(d), [d]);
  if (!series.length) return null;
  return (
    <section aria-labelledby="turn-diag-h" className="space-y-2" data-testid="turn-diagnostics">
      <h2 id="turn-diag-h" className={labelCls}>
        Turn-level diagnostics over training
      </h2>
      <TurnHeatmap d={d} />
      <h3 className="pt-2 text-sm font-medium">
        The first {Math.min(d.turns, TURN_LINES)} turns as lines
        {d.turns > TURN_LINES ? ` (turns ≥ ${TURN_LINES + 1} pooled into one; the heatmap above shows each)` : ""}
      </h3>
      <ul className="flex flex-wrap gap-3 text-xs" aria-label="Turn indices">
        {series.map((s, i) => (
          <li key={s.label} className="flex items-center gap-1.5">
            <span className="w-4 rounded" style={{ background: colorAt(i), height: 3 }} aria-hidden />
            {s.label}
          </li>
        ))}
      </ul>
      <div className="grid gap-3 sm:grid-cols-2 xl:grid-cols-3">
        {CHARTS.filter(([k]) => k !== "entropy" || d.entropy?.some((row) => row.some((h) => h !== null))).map(([k, label, help]) => (
          <TurnChart key={k} d={d} series={series} k={k} label={label} help={help} />
        ))}
      </div>
    </section>
  );
}

function TurnChart({ d, series, k, label, help }: { d: TurnTable; series: TurnSeries[]; k: keyof Omit<TurnSeries, "label">; label: string; help: string }) {
  const rows = d.steps.map((step, s) => Object.fromEntries([["step", step], ...series.map((x, i) => [`t${i}`, x[k][s]])]));
  const lines = series.map((x, i) => ({ key: `t${i}`, name: x.label, color: colorAt(i) }));
  return (
    <StepLineChart
      rows={rows}
      lines={lines}
      label={label}
      help={help}
      testId={`turn-diag-${k}`}
      shares={k === "creditShare" || k === "reach"}
      format={k === "meanAdvantage" ? fmtSigned : fmt}
      heightCls="h-40"
    />
  );
}

/** One diagnostic for every (training step, turn index): rows are the shown steps, columns the turns. */
function TurnHeatmap({ d }: { d: TurnTable }) {
  const theme = useTheme();
  const hasEntropy = !!d.entropy?.some((row) => row.some((h) => h !== null));
  const metrics = TURN_METRICS.filter((m) => m.id !== "entropy" || hasEntropy);
  const [chosen, setMetric] = useState<TurnMetric>("creditShare");
  const metric = metrics.find((m) => m.id === chosen) ?? metrics[0];
  const values = useMemo(() => turnGrid(d, metric.id), [d, metric.id]);
  // reach on [0, 1]; the others up to their largest |value| (a 50-turn credit share is about 0.02 a turn)
  const max = metric.id === "reach" ? 1 : symmetricMax(values.flat());
  const show = (v: number | null) =>
    metric.id === "meanAdvantage" ? fmtSigned(v) : metric.id === "entropy" ? fmt(v) : v === null ? "—" : `${(v * 100).toFixed(1)} %`;
  const tip = (c: Cell) => (
    <div className="space-y-1 tabular-nums">
      <div className="font-medium">
        step {d.steps[c.row]} · turn {c.col + 1}
      </div>
      <div>
        {metric.label} <b>{show(values[c.row][c.col])}</b>
      </div>
      <div className="text-zinc-500">{d.count[c.row]?.[c.col] ?? 0} turns at this index</div>
    </div>
  );
  return (
    <figure className={`${cardCls} space-y-2 p-3`} data-testid="turn-diag-heatmap" data-metric={metric.id}>
      <div className="flex flex-wrap items-end justify-between gap-3">
        <figcaption className="text-sm">
          <label className="flex flex-wrap items-center gap-2">
            <span className="font-medium">By training step (rows) and turn index (columns):</span>
            <select className={inputCls} value={metric.id} onChange={(e) => setMetric(e.target.value as TurnMetric)} aria-label="Turn diagnostic">
              {metrics.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.label}
                </option>
              ))}
            </select>
          </label>
          <span className="text-xs text-zinc-500">{metric.help}</span>
        </figcaption>
        <DivergingLegend max={max} theme={theme} label={metric.label} />
      </div>
      <Heatmap
        values={values}
        max={max}
        theme={theme}
        rowLabels={d.steps.map((s) => `step ${s}`)}
        renderTooltip={tip}
        describe={(c) => `step ${d.steps[c.row]}, turn ${c.col + 1}: ${metric.label} ${show(values[c.row][c.col])}`}
        ariaLabel={`${metric.label} by training step and turn index`}
        testId="turn-diag-grid"
        maxCellWidth={40}
        showValues={false}
      />
    </figure>
  );
}
