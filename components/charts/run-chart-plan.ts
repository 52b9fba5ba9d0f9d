// Which of a run's metric charts the run page draws how: the order it shows them in, which ones
// come with the page's HTML (prefetched on the server, drawn before any script runs), and which
// have nothing to draw in the current view (listed compactly instead of an empty panel).
// Pure (no React, no I/O): the server page (app/runs/[id]/page.tsx) and the client view
// (components/runs/run-view.tsx) must reach the same answer from the same key summaries.
import { byNamespace } from "@/lib/charts/namespaces";
import { CHART_POINTS, PREFETCH_CHARTS } from "@/lib/charts/prepare-series";
import type { MetricKeyInfo } from "@/lib/schemas/metrics";

/** Points the page's HTML may carry for prefetched charts: what PREFETCH_CHARTS full charts cost. */
export const PREFETCH_POINT_BUDGET = PREFETCH_CHARTS * CHART_POINTS;

/** The most charts prefetched however short their series (each one costs a query and some markup). */
export const PREFETCH_MAX_CHARTS = 64;

type KeySummary = Pick<MetricKeyInfo, "key" | "count">;

/** The keys in the order the page shows them: namespace sections (lib/charts/namespaces), keys in the order given within each. */
export function chartOrder(keys: readonly KeySummary[]): string[] {
  return byNamespace(keys.map((k) => k.key)).flatMap(([, ks]) => ks);
}

/**
 * The keys whose series the page sends with its HTML, in display order (not key order: the
 * charts at the top of the page are the ones a reader sees first). A chart costs the points it
 * will be read with (its count, at most CHART_POINTS); charts are taken while they fit
 * PREFETCH_POINT_BUDGET, so a run of long series still gets its first PREFETCH_CHARTS charts
 * and a run of short ones (a train run of a few hundred steps: ~36 keys) gets all of them.
 */
export function prefetchedKeys(keys: readonly KeySummary[]): string[] {
  const count = new Map(keys.map((k) => [k.key, k.count]));
  const out: string[] = [];
  let points = 0;
  for (const key of chartOrder(keys)) {
    const cost = Math.min(Math.max(count.get(key) ?? 0, 1), CHART_POINTS);
    if (out.length >= PREFETCH_MAX_CHARTS || (out.length >= PREFETCH_CHARTS && points + cost > PREFETCH_POINT_BUDGET)) break;
    out.push(key);
    points += cost;
  }
  return out;
}

export interface ChartViewLike {
  x: "step" | "env" | "wall";
  log: boolean;
}

/**
 * Why a key has nothing to draw in this view, from its summary alone (null: it may have points
 * to draw). No finite point stored; on a log scale, no value above 0; against env steps, every
 * point outside the steps the env-step counter was logged at.
 */
export function nothingToDraw(k: MetricKeyInfo, view: ChartViewLike, env: MetricKeyInfo | null): string | null {
  if (k.count === 0) return "no finite points";
  if (view.log && k.maxValue <= 0) return k.minValue === k.maxValue ? `all ${k.maxValue} on a log scale` : "nothing above 0 on a log scale";
  if (view.x === "env" && env && k.key !== env.key && (k.lastStep < env.firstStep || k.firstStep > env.lastStep))
    return `no env-step count at step${k.firstStep === k.lastStep ? ` ${k.firstStep}` : `s ${k.firstStep}–${k.lastStep}`}`;
  return null;
}
