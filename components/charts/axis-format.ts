// Axis labels of the metric charts (shared by the static first paint and the Recharts chart).
import { durationTickFormat, fmt, fmtDuration } from "@/lib/charts/format";
import type { XAxisKind } from "@/lib/charts/prepare-series";

export const X_LABEL = { step: "step", env: "env steps", wall: "wall time" } as const;
/** The x axis's tick labels: wall time as durations as precise as the tick step. */
export const xTick = (x: XAxisKind, ticks: readonly number[]) => (x === "wall" ? durationTickFormat(ticks) : fmt);
/** One point's x in a tooltip: wall time to a tenth of a second under a minute. */
export const xValue = (x: XAxisKind) => (v: number) => (x === "wall" ? fmtDuration(v, { decimals: 1 }) : fmt(v));
