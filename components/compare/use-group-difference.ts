// The state of the "difference of the two groups" panel: the metric, where the runs are compared
// (at one step, or at the same elapsed seconds since each run's start) and the result, from each
// run's full-resolution stored values (the export, never the charts' downsampled points).
import { useMemo, useState } from "react";
import { useQueries } from "@tanstack/react-query";
import { metricExactQuery } from "@/lib/queries";
import type { RunGroup } from "@/lib/charts/prepare-compare";
import type { RunOut } from "@/lib/schemas/runs";
import { elapsedSpan, groupDifference, valueAtElapsed, valueAtStep } from "@/lib/stats/group-difference";

export type DiffAt = "step" | "time";
type Exact = { steps: number[]; values: (number | string)[]; wallTimes: number[] };

/** A run's start in epoch seconds: when its job started, else its first stored point. */
function startOf(run: RunOut | undefined, d: Exact): number {
  const t = run?.startedAt ? Date.parse(run.startedAt) / 1000 : Number.NaN;
  return Number.isFinite(t) ? t : Math.min(...d.wallTimes);
}

export function useGroupDifference(groups: RunGroup[], runs: RunOut[], keys: string[]) {
  const [metric, setMetricState] = useState(() => keys.find((k) => k.startsWith("eval/")) ?? keys[0]);
  const [at, setAtState] = useState<DiffAt>("step");
  const [input, setInput] = useState<number | null>(null);
  const ids = [...groups[0].runIds, ...groups[1].runIds];
  const exact = useQueries({ queries: ids.map((id) => metricExactQuery(id, metric)) });
  const loaded = exact.every((q) => q.data);
  const failed = exact.find((q) => q.error)?.error;
  const version = exact.map((q) => q.dataUpdatedAt).join();
  const byRun = new Map(ids.map((id, i) => [id, exact[i].data as Exact | undefined]));
  const runOf = (id: string) => runs.find((r) => r.id === id);
  // steps every run has a point at (default: the last); the longest time every run reached (default)
  // biome-ignore lint/correctness/useExhaustiveDependencies: the queries are compared by their update times (useQueries returns a new array each render)
  const shared = useMemo(() => {
    if (!loaded) return { steps: [] as number[], seconds: null as number | null };
    const sets = ids.map((id) => new Set(byRun.get(id)?.steps ?? []));
    const steps = [...sets[0]].filter((s) => sets.every((x) => x.has(s))).sort((a, b) => a - b);
    const spans = ids.map((id) => {
      const d = byRun.get(id)!;
      return d.wallTimes.length ? elapsedSpan(d.wallTimes, startOf(runOf(id), d)) : Number.NaN;
    });
    // to the millisecond below, so the shortest run's last point is still in
    const seconds = spans.every(Number.isFinite) ? Math.max(0, Math.floor(Math.min(...spans) * 1000) / 1000) : null;
    return { steps, seconds };
  }, [loaded, version, runs]);
  const where = input ?? (at === "step" ? (shared.steps.at(-1) ?? null) : shared.seconds);
  // biome-ignore lint/correctness/useExhaustiveDependencies: as above
  const result = useMemo(() => {
    if (!loaded || where === null) return null;
    const value = (id: string) => {
      const d = byRun.get(id);
      if (!d) return undefined;
      return at === "step" ? valueAtStep(d.steps, d.values, where) : valueAtElapsed(d.wallTimes, d.values, startOf(runOf(id), d), where);
    };
    const sample = (g: RunGroup) => ({ label: g.label, values: g.runIds.map((id) => ({ runId: id, value: value(id) })) });
    return groupDifference(sample(groups[0]), sample(groups[1]));
  }, [loaded, where, at, groups, version, runs]);
  const setMetric = (k: string) => {
    setMetricState(k);
    setInput(null);
  };
  const setAt = (a: DiffAt) => {
    setAtState(a);
    setInput(null);
  };
  return { metric, setMetric, at, setAt, where, setInput, shared, loaded, failed, result, name: (id: string) => runOf(id)?.name ?? id };
}
