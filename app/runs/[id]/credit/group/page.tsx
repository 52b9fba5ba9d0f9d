import { Suspense } from "react";
import { GroupHeatmapView } from "@/components/credit/group-heatmap-view";
import { estimatorCatalog } from "@/lib/runs/catalog";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { groupCredit } from "@/lib/runs/credit-views";
import { creditSourceFromUrl } from "@/lib/schemas/credit";
import { groupCreditQuery } from "@/lib/queries";
import { type Search, seedStepAndGroup } from "../../seed-step";

export const dynamic = "force-dynamic";
export const metadata = { title: "Credit heatmap" };

/** `?step=&group=&est=&p=&cmp=&cp=&view=&scale=`: every choice of the view is in the URL. */
export default async function GroupCreditPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<Search> }) {
  const { id } = await params;
  // The group's credit comes with the page (no request after hydration).
  const { seed, step, groupId, one } = seedStepAndGroup(id, await searchParams);
  if (step !== undefined && groupId) {
    const source = creditSourceFromUrl(one("est"), one("p"));
    seed.push([groupCreditQuery(id, step, groupId, source).queryKey, tryRead(() => groupCredit(id, step, groupId, source))]);
  }
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <GroupHeatmapView runId={id} catalog={estimatorCatalog()} />
      </Suspense>
    </Hydrate>
  );
}
