"use client";
// A sweep's header on the compare page: its grid and seeds, and how many of its runs are queued,
// running and done (polled while any is live; each change refreshes the compared runs and curves).
import { useEffect } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { sweepQuery } from "@/lib/queries";
import { pointLabel } from "@/lib/schemas/sweeps";
import { ProgressBar } from "@/components/ui/progress-bar";
import { StatusBadge } from "@/components/ui/status-badge";
import { cardCls, labelCls } from "@/components/ui/controls";

const ORDER = ["queued", "running", "succeeded", "failed", "canceled"];

export function SweepProgress({ id }: { id: string }) {
  const { data, error } = useQuery(sweepQuery(id));
  const qc = useQueryClient();
  const counts = data ? ORDER.map((s) => `${s}:${data.status[s] ?? 0}`).join() : "";
  useEffect(() => {
    if (!counts) return;
    void qc.invalidateQueries({ queryKey: ["compare"] });
    void qc.invalidateQueries({ queryKey: ["run"] });
  }, [counts, qc]);
  if (error)
    return (
      <p className="text-sm text-red-600" role="alert">
        {error.message}
      </p>
    );
  if (!data) return null;
  const total = data.runIds.length;
  const done = (data.status.succeeded ?? 0) + (data.status.failed ?? 0) + (data.status.canceled ?? 0);
  const grid = data.spec.grid.map((g) => pointLabel({ [g.path]: g.values.length === 1 ? g.values[0] : `{${g.values.join(", ")}}` }));
  return (
    <section className={`${cardCls} space-y-2 p-3`} aria-labelledby="sweep-h" data-testid="sweep-progress">
      <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
        <h2 id="sweep-h" className={labelCls}>
          Sweep {data.name}
        </h2>
        <span className="text-sm text-zinc-500">
          {data.jobKind} · {grid.length ? grid.join(" × ") : "one config"} × seeds {data.spec.seeds.join(", ")} = {total} runs
        </span>
      </div>
      <ProgressBar value={total ? done / total : 0} label="sweep runs done" />
      <ul className="flex flex-wrap gap-3 text-sm" aria-label="Sweep runs by status">
        {ORDER.filter((s) => data.status[s]).map((s) => (
          <li key={s} className="flex items-center gap-1.5" data-testid={`sweep-status-${s}`}>
            <StatusBadge status={s} /> <span className="tabular-nums">{data.status[s]}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
