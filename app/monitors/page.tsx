import { Suspense } from "react";
import { MonitorsView } from "@/components/monitors/monitors-view";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { readAlertConfig } from "@/lib/db/alerts";
import { listProjects } from "@/lib/db/runs";
import { alertRulesQuery, projectsQuery } from "@/lib/queries/alerts";

export const dynamic = "force-dynamic";
export const metadata = { title: "Monitors" };

/** The projects and the chosen project's rules come with the page, under the keys the view reads. */
export default async function MonitorsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const projects = tryRead(() => ({ projects: listProjects() }));
  const id = (typeof sp.project === "string" && sp.project) || projects?.projects[0]?.id;
  const seed: [readonly unknown[], unknown][] = [[projectsQuery().queryKey, projects]];
  if (id) seed.push([alertRulesQuery(id).queryKey, tryRead(() => readAlertConfig(id))]);
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <MonitorsView />
      </Suspense>
    </Hydrate>
  );
}
