import { Suspense } from "react";
import { TaskTimelineView } from "@/components/timeline/task-timeline-view";
import { Hydrate, tryRead } from "@/components/ui/hydrate";
import { taskTimeline, trajectoryDiff } from "@/lib/db/task-timeline";
import { taskTimelineQuery, trajectoryDiffQuery } from "@/lib/queries/labels";
import { taskTimelineQuerySchema } from "@/lib/schemas/timeline";

export const dynamic = "force-dynamic";
export const metadata = { title: "Task across training" };

const one = (v: string | string[] | undefined) => (typeof v === "string" && v ? v : undefined);

/** The timeline (and the two trajectories picked) come with the page, under the keys the view reads. */
export default async function TaskTimelinePage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const runs = (one(sp.runs) ?? "").split(",").filter(Boolean);
  const task = one(sp.task)
    ? { task: one(sp.task) }
    : one(sp.prompt)
      ? { prompt: one(sp.prompt) }
      : one(sp.seed)
        ? { seed: one(sp.seed), envId: one(sp.envId) }
        : {};
  const seed: [readonly unknown[], unknown][] = [];
  const q = taskTimelineQuerySchema.safeParse({ runs: runs.join(","), ...task });
  if (q.success) seed.push([taskTimelineQuery(runs, task).queryKey, tryRead(() => taskTimeline(q.data))]);
  const [a, b] = [one(sp.a), one(sp.b)];
  if (a && b) seed.push([trajectoryDiffQuery(a, b).queryKey, tryRead(() => trajectoryDiff(a, b))]);
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <TaskTimelineView />
      </Suspense>
    </Hydrate>
  );
}
