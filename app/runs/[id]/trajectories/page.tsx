import { Suspense } from "react";
import { TrajectoryBrowser } from "@/components/trajectories/trajectory-browser";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { getTrajectory } from "@/lib/db/rollouts";
import { groupCredit } from "@/lib/runs/credit-views";
import { groupCreditQuery, trajectoryQuery } from "@/lib/queries";
import { type Search, searchValue, seedStepAndGroup } from "../seed-step";

export const dynamic = "force-dynamic";
export const metadata = { title: "Trajectories" };

/** A trajectory of at most this many turns comes with the page. */
const SEED_TURNS = 20;

/**
 * The step, its groups, the opened group's trajectories and the opened trajectory's turns come with
 * the page, under the client's query keys (as on the credit heatmap page); what fails here the
 * client fetches and reports.
 */
export default async function TrajectoriesPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<Search> }) {
  const { id } = await params;
  // the browser's own choice of group: the URL's, else the first mixed one (of those shown)
  const sp = await searchParams;
  const mixedOnly = searchValue(sp)("mixed") === "1";
  const { seed, step, groupId, one } = seedStepAndGroup(id, sp, (groups) =>
    mixedOnly ? groups?.filter((g) => g.successRate > 0 && g.successRate < 1) : groups,
  );
  if (step !== undefined && groupId) {
    const credit = tryRead(() => groupCredit(id, step, groupId, {}));
    seed.push([groupCreditQuery(id, step, groupId, {}).queryKey, credit]);
    // the trajectory the browser opens: the URL's, else the group's first when no filter is set
    const filtered = ["outcome", "minLen", "maxLen", "minR", "maxR"].some((k) => one(k));
    const trajId = one("traj") ?? (filtered ? undefined : credit?.trajectories[0]?.id);
    // A long trajectory's turn texts (50 turns of 1-2 KB observations, their tokens) are not put in
    // the page: the browser loads them after the first paint, as it does when another one is opened.
    const length = credit?.trajectories.find((t) => t.id === trajId)?.length;
    if (trajId && length !== undefined && length <= SEED_TURNS)
      seed.push([trajectoryQuery(trajId).queryKey, tryRead(() => getTrajectory(trajId) ?? undefined)]);
  }
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <TrajectoryBrowser runId={id} />
      </Suspense>
    </Hydrate>
  );
}
