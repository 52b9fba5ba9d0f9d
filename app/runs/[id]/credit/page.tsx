import { Suspense } from "react";
import { CreditOverviewView } from "@/components/credit/credit-overview-view";
import { estimatorCatalog } from "@/lib/runs/catalog";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { getRun } from "@/lib/db/runs";
import { creditOverview } from "@/lib/runs/credit-views";
import { creditOverviewQuery, runQuery } from "@/lib/queries";

export const dynamic = "force-dynamic";
export const metadata = { title: "Credit over training" };

/** The stored credit over training comes with the page (the default view: no `est`, 50 steps). */
export default async function CreditPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { id } = await params;
  const sp = await searchParams;
  const run = tryRead(() => getRun(id));
  const seed: [readonly unknown[], unknown][] = [[runQuery(id).queryKey, run]];
  if (run && !sp.est && !sp.p && !sp.steps) seed.push([creditOverviewQuery(id, {}, 50).queryKey, tryRead(() => creditOverview(id, {}, { maxSteps: 50 }))]);
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <CreditOverviewView runId={id} catalog={estimatorCatalog()} />
      </Suspense>
    </Hydrate>
  );
}
