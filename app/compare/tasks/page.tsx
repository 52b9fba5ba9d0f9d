import { Suspense } from "react";
import { TaskCompareView } from "@/components/compare/task-compare-view";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { compareTasks } from "@/lib/runs/task-compare";
import { taskCompareQuery } from "@/lib/queries";

export const dynamic = "force-dynamic";
export const metadata = { title: "Compare tasks" };

/** The comparison comes with the page, under the key the view reads (as GET /api/v1/compare/tasks answers it). */
export default async function CompareTasksPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const [a, b] = [sp.a, sp.b].map((v) => (typeof v === "string" ? v : ""));
  const seed: [readonly unknown[], unknown][] = a && b ? [[taskCompareQuery(a, b).queryKey, tryRead(() => compareTasks(a, b))]] : [];
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <TaskCompareView />
      </Suspense>
    </Hydrate>
  );
}
