"use client";
// Legend of the diverging scale: gradient from -max to +max with ticks, and the gap swatch.
import { legendGradient, legendTicks, type Theme } from "@/lib/charts/diverging";
import { fmt } from "@/lib/charts/format";

export function DivergingLegend({ max, theme, label, clipped }: { max: number; theme: Theme; label: string; clipped?: boolean }) {
  return (
    <div className="flex flex-wrap items-end gap-4 text-xs text-zinc-600 dark:text-zinc-400" data-testid="heatmap-legend">
      <div>
        <div className="mb-0.5">
          {label}
          {clipped ? " (clipped at the 98th percentile of |value|)" : ""}
        </div>
        <div className="h-3 w-56 rounded-sm border border-zinc-300 dark:border-zinc-700" style={{ background: legendGradient(theme) }} />
        <div className="flex w-56 justify-between tabular-nums">
          {legendTicks(max).map((t, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the legend's five ticks, at fixed positions
            <span key={i}>
              {i === 0 && clipped ? "≤" : i === 4 && clipped ? "≥" : ""}
              {fmt(t)}
            </span>
          ))}
        </div>
      </div>
      <div className="flex items-center gap-1.5 pb-4">
        <svg width="14" height="14" aria-hidden>
          <defs>
            <pattern id="lg-gap" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
              <line x1="0" y1="0" x2="0" y2="4" stroke={theme === "dark" ? "#52525b" : "#d4d4d8"} strokeWidth="2" />
            </pattern>
          </defs>
          <rect width="14" height="14" fill="url(#lg-gap)" stroke={theme === "dark" ? "#52525b" : "#d4d4d8"} />
        </svg>
        no value stored
      </div>
    </div>
  );
}
