"use client";
// The interactive metric chart (Recharts: hover values). Loaded on demand by metric-chart.tsx,
// on the same scales and layout as the static first paint it replaces.
import { CartesianGrid, Line, LineChart, Tooltip, XAxis, YAxis } from "recharts";
import type { AxisScale, ChartPoint } from "@/lib/charts/prepare-series";
import { fmt, tickFormat } from "@/lib/charts/format";
import { CHART_LAYOUT, type StaticLine } from "./static-line-chart";
import { X_LABEL, xTick, xValue } from "./axis-format";
import type { ChartView } from "./chart-controls";

/** `onStep`: a click on the chart opens that point's step (the run page opens its trajectories). */
export default function InteractiveChart({
  points,
  scales,
  lines,
  view,
  onStep,
}: {
  points: ChartPoint[];
  scales: { x: AxisScale; y: AxisScale };
  lines: StaticLine[];
  view: ChartView;
  onStep?: (step: number) => void;
}) {
  return (
    <LineChart
      responsive
      style={{ width: "100%", height: "100%", cursor: onStep ? "pointer" : undefined }}
      data={points}
      margin={CHART_LAYOUT.margin}
      onClick={(e) => {
        const step = (points[Number(e.activeTooltipIndex)] as { step?: number } | undefined)?.step;
        if (onStep && step !== undefined) onStep(step);
      }}
    >
      <CartesianGrid strokeDasharray="3 3" stroke="currentColor" strokeOpacity={0.12} />
      <XAxis
        dataKey="x"
        type="number"
        domain={scales.x.domain}
        ticks={scales.x.ticks}
        interval={0}
        tick={{ fontSize: 11 }}
        tickFormatter={xTick(view.x, scales.x.ticks)}
        stroke="currentColor"
        strokeOpacity={0.5}
        height={CHART_LAYOUT.xAxisHeight}
      />
      <YAxis
        interval={0}
        tick={{ fontSize: 11 }}
        width={CHART_LAYOUT.yAxisWidth}
        tickFormatter={view.log ? fmt : tickFormat(scales.y.ticks)}
        stroke="currentColor"
        strokeOpacity={0.5}
        scale={view.log ? "log" : "auto"}
        domain={scales.y.domain}
        ticks={scales.y.ticks}
        allowDataOverflow
      />
      <Tooltip
        formatter={(v, name) => [fmt(v === null || v === undefined ? null : Number(v)), name === "ySmooth" ? "smoothed" : "value"]}
        labelFormatter={(x, payload) => {
          const step = (payload?.[0]?.payload as { step?: number } | undefined)?.step;
          const at = view.x === "step" ? `step ${x}` : `${X_LABEL[view.x]} ${xValue(view.x)(Number(x))} · step ${step ?? "?"}`;
          return onStep ? `${at} · click: its trajectories` : at;
        }}
        contentStyle={{ fontSize: 12 }}
      />
      {lines.map((l) => (
        <Line
          key={l.key}
          type="linear"
          dataKey={l.key}
          stroke={l.color}
          strokeOpacity={l.opacity}
          strokeWidth={l.width}
          dot={l.key === "y" && lines.length === 1 && points.length < 40}
          isAnimationActive={false}
          connectNulls={false}
        />
      ))}
    </LineChart>
  );
}
