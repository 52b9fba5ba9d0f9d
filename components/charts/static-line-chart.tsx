"use client";
// The first paint of a metric chart: the same axes, grid, ticks and lines as the interactive
// Recharts chart (same scales from lib/charts/prepare-series `chartScales`, same margins), but
// laid out with CSS (percentages and calc) instead of measured pixels, so it renders on the
// server and is on screen before any script runs. A Recharts chart costs ~30 ms of main-thread
// time to mount whatever its size, so a page of 20 charts shows these first and swaps each for
// Recharts on hover, on focus, or when the browser is idle (metric-chart.tsx). A missing value
// breaks the line (a gap).
import type { AxisScale, ChartPoint } from "@/lib/charts/prepare-series";

/** Recharts' layout for our charts: chart margin, YAxis width, XAxis height (its default 30). */
export const CHART_LAYOUT = { margin: { top: 4, right: 8, bottom: 0, left: 0 }, yAxisWidth: 48, xAxisHeight: 30 } as const;

export interface StaticLine {
  key: "y" | "ySmooth";
  color: string;
  opacity: number;
  width: number;
}

/** The plot area is drawn in a 1000 x 1000 box stretched over it; strokes keep their pixel width. */
const N = 1000;

/** A further line with points of its own (Compare draws one per run or group on shared axes). */
export interface StaticOverlay {
  id: string;
  points: readonly ChartPoint[];
  color: string;
  opacity: number;
  width: number;
}

export function StaticLineChart({
  points,
  scales,
  lines,
  log,
  xFormat,
  yFormat,
  dots = false,
  overlays = [],
}: {
  points: readonly ChartPoint[];
  overlays?: StaticOverlay[];
  scales: { x: AxisScale; y: AxisScale };
  lines: StaticLine[];
  log: boolean;
  xFormat: (v: number) => string;
  yFormat: (v: number) => string;
  /** draw the points of the first line (short series, as the interactive chart does) */
  dots?: boolean;
}) {
  const { margin, yAxisWidth, xAxisHeight } = CHART_LAYOUT;
  const L = margin.left + yAxisWidth;
  const R = margin.right;
  const T = margin.top;
  const B = margin.bottom + xAxisHeight;
  const [dx0, dx1] = scales.x.domain;
  const [dy0, dy1] = scales.y.domain;
  const fy = log ? Math.log10 : (v: number) => v;
  const nx = (v: number) => (v - dx0) / (dx1 - dx0 || 1);
  const ny = (v: number) => (fy(v) - fy(dy0)) / (fy(dy1) - fy(dy0) || 1);
  const inY = (v: number | null): v is number => v !== null && !(log && v <= 0) && v >= dy0 && v <= dy1;
  const path = (key: "y" | "ySmooth", pts: readonly ChartPoint[] = points) => {
    let d = "";
    let pen = false;
    for (const p of pts) {
      const v = p[key];
      if (!inY(v)) {
        pen = false;
        continue;
      }
      d += `${pen ? "L" : "M"}${(nx(p.x) * N).toFixed(1)},${((1 - ny(v)) * N).toFixed(1)}`;
      pen = true;
    }
    return d;
  };
  const xAt = (f: number) => `calc(${L}px + ${f.toFixed(5)} * (100% - ${L + R}px))`;
  const yAt = (f: number) => `calc(${T}px + ${(1 - f).toFixed(5)} * (100% - ${T + B}px))`;
  const stroke = { vectorEffect: "non-scaling-stroke" as const };
  return (
    <div className="relative h-full w-full select-none text-[11px] text-[#666]" data-static-chart>
      <svg
        className="absolute overflow-visible"
        style={{ left: L, top: T, width: `calc(100% - ${L + R}px)`, height: `calc(100% - ${T + B}px)` }}
        viewBox={`0 0 ${N} ${N}`}
        preserveAspectRatio="none"
        aria-hidden
      >
        <g stroke="currentColor" strokeOpacity={0.12} strokeDasharray="3 3" className="text-zinc-900 dark:text-zinc-100">
          {scales.x.ticks.map((t) => (
            <line key={`gx${t}`} x1={nx(t) * N} x2={nx(t) * N} y1={0} y2={N} style={stroke} />
          ))}
          {scales.y.ticks.map((t) => (
            <line key={`gy${t}`} x1={0} x2={N} y1={(1 - ny(t)) * N} y2={(1 - ny(t)) * N} style={stroke} />
          ))}
        </g>
        <g stroke="currentColor" strokeOpacity={0.5} className="text-zinc-900 dark:text-zinc-100">
          <line x1={0} x2={N} y1={N} y2={N} style={stroke} />
          <line x1={0} x2={0} y1={0} y2={N} style={stroke} />
        </g>
        {lines.map((l) => (
          <path
            key={l.key}
            className="chart-line"
            d={path(l.key)}
            fill="none"
            stroke={l.color}
            strokeOpacity={l.opacity}
            strokeWidth={l.width}
            style={stroke}
          />
        ))}
        {overlays.map((o) => (
          <path
            key={o.id}
            className="chart-line"
            data-line={o.id}
            d={path("y", o.points)}
            fill="none"
            stroke={o.color}
            strokeOpacity={o.opacity}
            strokeWidth={o.width}
            style={stroke}
          />
        ))}
        {dots ? (
          <path
            d={points
              .filter((p) => inY(p.y))
              .map((p) => `M${(nx(p.x) * N).toFixed(1)},${((1 - ny(p.y!)) * N).toFixed(1)}h0`)
              .join("")}
            stroke={lines[0].color}
            strokeWidth={6}
            strokeLinecap="round"
            style={stroke}
          />
        ) : null}
      </svg>
      {scales.x.ticks.map((t) => (
        <span
          key={`tx${t}`}
          data-axis="x"
          className="absolute -translate-x-1/2 whitespace-nowrap leading-none"
          style={{ left: xAt(nx(t)), top: `calc(100% - ${B}px + 9px)` }}
        >
          {xFormat(t)}
        </span>
      ))}
      {scales.y.ticks.map((t) => (
        <span
          key={`ty${t}`}
          className="absolute -translate-y-1/2 whitespace-nowrap text-right leading-none"
          style={{ right: `calc(100% - ${L}px + 8px)`, top: yAt(ny(t)) }}
        >
          {yFormat(t)}
        </span>
      ))}
    </div>
  );
}
