"use client";
// Turn-level diagnostics over training (lib/charts/turn-diagnostics.ts), next to credit over
// training: one line per turn index of the episode — its share of the step's |advantage|, its mean
// advantage, and the share of trajectories that reach it.
import { useMemo } from "react";
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { turnDiagnostics, type TurnSeries, type TurnTable } from "@/lib/charts/turn-diagnostics";
import { colorAt } from "@/lib/charts/palette";
import { niceScale } from "@/lib/charts/domain";
import { fmt, fmtSigned, tickFormat } from "@/lib/charts/format";
import { cardCls, labelCls } from "@/components/ui/controls";

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
      <h2 id="turn-diag-h" className={labelCls}>Turn-level diagnostics over training</h2>
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
  const shares = k === "creditShare" || k === "reach";
  const scale = shares ? { domain: [0, 1] as [number, number], ticks: [0, 0.25, 0.5, 0.75, 1] } : niceScale(series.flatMap((x) => x[k]));
  return (
    <figure className={`${cardCls} p-3`} data-testid={`turn-diag-${k}`}>
      <figcaption className="mb-1 text-sm font-medium" title={help}>
        {label} <span className="font-normal text-zinc-500">· {help}</span>
      </figcaption>
      <div className="h-40">
        <ResponsiveContainer width="100%" height="100%">
          <LineChart data={rows} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" stroke="currentColor" strokeOpacity={0.12} />
            <XAxis dataKey="step" type="number" domain={["dataMin", "dataMax"]} allowDecimals={false} tick={{ fontSize: 11 }} stroke="currentColor" strokeOpacity={0.5} />
            <YAxis tick={{ fontSize: 11 }} width={48} tickFormatter={scale ? tickFormat(scale.ticks) : fmt} interval={0} stroke="currentColor" strokeOpacity={0.5} domain={scale?.domain ?? ["auto", "auto"]} ticks={scale?.ticks} />
            <Tooltip formatter={(v) => (k === "meanAdvantage" ? fmtSigned(v === null ? null : Number(v)) : fmt(v === null ? null : Number(v)))} labelFormatter={(s) => `step ${s}`} contentStyle={{ fontSize: 12 }} />
            {series.map((x, i) => (
              <Line key={x.label} type="linear" dataKey={`t${i}`} name={x.label} stroke={colorAt(i)} strokeWidth={1.5} dot={rows.length < 40} isAnimationActive={false} connectNulls={false} />
            ))}
          </LineChart>
        </ResponsiveContainer>
      </div>
    </figure>
  );
}
