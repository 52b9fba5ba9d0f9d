import { Suspense } from "react";
import { GroupHeatmapView } from "@/components/credit/group-heatmap-view";
import { estimatorCatalog } from "@/lib/runs/catalog";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { getRun } from "@/lib/db/runs";
import { listGroups, listSteps } from "@/lib/db/rollouts";
import { groupCredit } from "@/lib/runs/credit-views";
import { creditSourceFromUrl } from "@/lib/schemas/credit";
import { defaultGroup } from "@/lib/charts/prepare-heatmap";
import { groupCreditQuery, groupsQuery, runQuery, stepsQuery } from "@/lib/queries";

export const dynamic = "force-dynamic";
export const metadata = { title: "Credit heatmap" };

type Search = Record<string, string | string[] | undefined>;

/** `?step=&group=&est=&p=&cmp=&cp=&view=&scale=`: every choice of the view is in the URL. */
export default async function GroupCreditPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<Search> }) {
  const { id } = await params;
  const sp = await searchParams;
  const one = (k: string) => (typeof sp[k] === "string" ? (sp[k] as string) : undefined);
  // The group's credit comes with the page (no request after hydration), under the same query
  // keys the client uses; anything that fails here is fetched, and reported, by the client.
  const run = tryRead(() => getRun(id));
  const steps = run ? tryRead(() => listSteps(id, 1, 1000)) : undefined;
  const step = one("step") !== undefined ? Number(one("step")) : steps?.steps[0]?.step;
  const groups = step !== undefined && Number.isInteger(step) ? tryRead(() => ({ groups: listGroups(id, step) })) : undefined;
  const groupId = one("group") ?? defaultGroup(groups?.groups)?.id;
  const seed: [readonly unknown[], unknown][] = [
    [runQuery(id).queryKey, run],
    [stepsQuery(id).queryKey, steps],
  ];
  if (step !== undefined && groups) seed.push([groupsQuery(id, step).queryKey, groups]);
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
