import { Suspense } from "react";
import { CompareView } from "@/components/compare/compare-view";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { getRun } from "@/lib/db/runs";
import { listSeries, readSeries } from "@/lib/db/metric-series";
import { CHART_POINTS } from "@/lib/charts/prepare-series";
import { compareQuery, seriesQuery } from "@/lib/queries";

export const dynamic = "force-dynamic";
export const metadata = { title: "Compare runs" };

/** Series read into the HTML at most (runs x keys); the rest the charts fetch themselves. */
const PREFETCH_SERIES = 96;

/**
 * The runs, their keys and every chart's series come with the page, under the keys the client
 * uses (as the run page does): 20 charts of 2 runs are drawn without 40 requests after hydration.
 */
export default async function ComparePage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const ids = (typeof sp.runs === "string" ? sp.runs : "").split(",").filter(Boolean);
  const seed: [readonly unknown[], unknown][] = [];
  const data = ids.length
    ? tryRead(() => {
        // the same answer as GET /api/v1/compare
        const runs = [...new Set(ids)].map((id) => getRun(id));
        const keys = new Map<string, number>();
        for (const r of runs) for (const s of listSeries(r.id)) keys.set(s.key, (keys.get(s.key) ?? 0) + 1);
        return { runs, keys: [...keys.entries()].map(([key, n]) => ({ key, runs: n })).sort((a, b) => b.runs - a.runs || a.key.localeCompare(b.key)) };
      })
    : undefined;
  if (data) {
    seed.push([compareQuery(ids).queryKey, data]);
    let n = 0;
    for (const k of data.keys)
      for (const r of data.runs)
        if (n++ < PREFETCH_SERIES)
          seed.push([seriesQuery(r.id, k.key, CHART_POINTS).queryKey, tryRead(() => readSeries(r.id, k.key, { maxPoints: CHART_POINTS }))]);
  }
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <CompareView />
      </Suspense>
    </Hydrate>
  );
}
