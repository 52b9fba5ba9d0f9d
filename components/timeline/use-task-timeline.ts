"use client";
// The task timeline's state, all of it in the URL: the runs, the task (uid, prompt, or seed and environment),
// the step the slider shows, and the two trajectories picked for the side-by-side view (a, b).
import { useMemo, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { taskTimelineQuery, trajectoryDiffQuery } from "@/lib/queries/labels";
import { useUrlState } from "@/components/ui/use-url-state";

/** The task as the URL names it: `task` (a uid), `prompt` (its first observation) or `seed` (with `envId`). */
export function timelineTask(get: (k: string) => string | null): { task?: string; prompt?: string; seed?: string; envId?: string } {
  const task = get("task") ?? undefined;
  if (task) return { task };
  const prompt = get("prompt") ?? undefined;
  if (prompt) return { prompt };
  const seed = get("seed") ?? undefined;
  return seed === undefined ? {} : { seed, envId: get("envId") ?? undefined };
}

export function useTaskTimeline() {
  const { get, set } = useUrlState();
  const runs = useMemo(() => (get("runs") ?? "").split(",").filter(Boolean), [get]);
  const task = timelineTask(get);
  const timeline = useQuery(taskTimelineQuery(runs, task));
  const data = timeline.data;
  const steps = useMemo(() => [...new Set((data?.runs ?? []).flatMap((r) => r.steps.map((s) => s.step)))].sort((x, y) => x - y), [data]);
  // the slider's own step first: the URL follows it, and a key held down moves on from where it is
  const [moved, setMoved] = useState<number | null>(null);
  const stepParam = moved ?? (get("step") === null ? null : Number(get("step")));
  const step = stepParam !== null && steps.includes(stepParam) ? stepParam : steps[steps.length - 1];
  const a = get("a") ?? "";
  const b = get("b") ?? "";
  const diff = useQuery(trajectoryDiffQuery(a, b));
  /** Picks a trajectory for side `k`; picking the other side's trajectory swaps nothing, it just sets both. */
  const pick = (k: "a" | "b", id: string) => set({ [k]: id });
  return { runs, task, timeline, data, steps, step, setStep: (s: number) => (setMoved(s), set({ step: s })), a, b, pick, diff };
}
export type TaskTimelineState = ReturnType<typeof useTaskTimeline>;
