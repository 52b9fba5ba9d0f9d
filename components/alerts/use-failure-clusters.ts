"use client";
// The clusters panel's state: the step range (in the URL: cfrom, cto; default the whole run) and its clusters.
import { useQuery } from "@tanstack/react-query";
import { failureClustersQuery } from "@/lib/queries/alerts";
import { useUrlState } from "@/components/ui/use-url-state";

const stepOf = (v: string | null) => (v !== null && /^\d{1,9}$/.test(v) ? Number(v) : undefined);

export function useFailureClusters(runId: string) {
  const { get, set } = useUrlState();
  const range = { from: stepOf(get("cfrom")), to: stepOf(get("cto")) };
  const q = useQuery(failureClustersQuery(runId, range));
  return { range, setRange: (r: { from?: string; to?: string }) => set({ cfrom: r.from, cto: r.to }), ...q };
}
