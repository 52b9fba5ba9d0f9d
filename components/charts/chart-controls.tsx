"use client";
// Chart view controls kept in the URL: smoothing (debiased EMA weight), x-axis, log scale.
import type { XAxisKind } from "@/lib/charts/prepare-series";
import { useUrlState } from "@/components/ui/use-url-state";
import { inputCls } from "@/components/ui/controls";

export interface ChartView {
  x: XAxisKind;
  smoothing: number;
  log: boolean;
}

export function useChartView(): ChartView {
  const { get } = useUrlState();
  const x = get("x");
  const smoothing = Number(get("smooth") ?? 0);
  return {
    x: x === "env" || x === "wall" ? x : "step",
    smoothing: Number.isFinite(smoothing) ? Math.min(0.99, Math.max(0, smoothing)) : 0,
    log: get("log") === "1",
  };
}

export function ChartControls({ envKey, children }: { envKey: string | null; children?: React.ReactNode }) {
  const { set } = useUrlState();
  const view = useChartView();
  return (
    <fieldset className="flex min-w-0 flex-wrap items-center gap-x-5 gap-y-2 text-sm" aria-label="Chart options">
      <label className="flex items-center gap-2">
        <span className="text-zinc-500">Smoothing</span>
        <input
          type="range"
          min={0}
          max={0.99}
          step={0.01}
          value={view.smoothing}
          aria-label="Smoothing (EMA weight)"
          onChange={(e) => set({ smooth: Number(e.target.value) === 0 ? undefined : e.target.value })}
          className="w-32 accent-indigo-600"
        />
        <span className="w-8 tabular-nums text-zinc-600 dark:text-zinc-300" title="debiased exponential moving average weight">
          {view.smoothing.toFixed(2)}
        </span>
      </label>
      <label className="flex items-center gap-2">
        <span className="text-zinc-500">X axis</span>
        <select className={inputCls} value={view.x} aria-label="X axis" onChange={(e) => set({ x: e.target.value === "step" ? undefined : e.target.value })}>
          <option value="step">step</option>
          <option value="env" disabled={!envKey}>
            environment steps{envKey ? "" : " (not logged)"}
          </option>
          <option value="wall">wall time</option>
        </select>
      </label>
      <label className="flex items-center gap-2">
        <input type="checkbox" checked={view.log} onChange={(e) => set({ log: e.target.checked ? "1" : undefined })} className="size-4 accent-indigo-600" />
        <span>log scale</span>
      </label>
      {view.x === "env" && envKey ? (
        <span className="text-xs text-zinc-500">
          x = <code>{envKey}</code>
        </span>
      ) : null}
      {children}
    </fieldset>
  );
}
