"use client";
// The run page's failure clusters: the failed trajectories of a step range grouped by what they did
// (lib/credit/failure-clusters.ts), each with its share of the failures per step as small bars,
// "new" and "growing" flags, and example trajectories.
import Link from "next/link";
import type { FailureClusters } from "@/lib/schemas/failure-clusters";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { useFailureClusters } from "./use-failure-clusters";

type Cluster = FailureClusters["clusters"][number];

export function FailureClustersPanel({ runId }: { runId: string }) {
  const { range, setRange, data, error, isPending } = useFailureClusters(runId);
  if (data && data.steps.length === 0) return null; // no rollout steps: nothing to cluster
  return (
    <section className={cardCls} data-testid="failure-clusters">
      <div className="flex flex-wrap items-center gap-3 border-b border-zinc-100 px-3 py-2 dark:border-zinc-800">
        <h2 className="text-sm font-medium">Failure clusters</h2>
        <label className={labelCls}>
          from step{" "}
          <input
            className={`${inputCls} w-20`}
            inputMode="numeric"
            defaultValue={range.from ?? ""}
            aria-label="from step"
            onBlur={(e) => setRange({ from: e.target.value, to: range.to?.toString() })}
          />
        </label>
        <label className={labelCls}>
          to{" "}
          <input
            className={`${inputCls} w-20`}
            inputMode="numeric"
            defaultValue={range.to ?? ""}
            aria-label="to step"
            onBlur={(e) => setRange({ from: range.from?.toString(), to: e.target.value })}
          />
        </label>
        {data ? (
          <span className="text-xs text-zinc-500">
            {data.trajectories} failed trajectories of {data.steps.length} steps ({data.steps[0]}–{data.steps[data.steps.length - 1]}, up to {data.perStepLimit}{" "}
            a step)
          </span>
        ) : null}
      </div>
      {error ? <p className="px-3 py-2 text-sm text-red-600">{error.message}</p> : null}
      {isPending ? <p className="px-3 py-2 text-sm text-zinc-500">Clustering…</p> : null}
      {data && !data.clusters.length ? <p className="px-3 py-2 text-sm text-zinc-500">No failed trajectory in this range.</p> : null}
      <ul className="divide-y divide-zinc-100 dark:divide-zinc-800">
        {data?.clusters.map((c) => (
          <ClusterRow key={c.index} runId={runId} c={c} />
        ))}
      </ul>
    </section>
  );
}

function ClusterRow({ runId, c }: { runId: string; c: Cluster }) {
  return (
    <li className="flex flex-wrap items-center gap-x-4 gap-y-1 px-3 py-2 text-sm" data-testid="failure-cluster">
      <span className="w-10 text-right font-mono text-xs text-zinc-500">{c.size}</span>
      <SizeBars c={c} />
      <span className="min-w-0 flex-1 font-mono text-xs">{c.name}</span>
      {c.flag ? (
        <span className="rounded bg-rose-100 px-1.5 text-xs font-medium text-rose-800 dark:bg-rose-900/50 dark:text-rose-200" data-testid="cluster-flag">
          {c.flag}
        </span>
      ) : null}
      <span className="flex gap-2 text-xs">
        {c.examples.map((e) => (
          <Link
            key={e.id}
            href={`/runs/${runId}/trajectories?step=${e.step}&group=${e.groupId}&traj=${e.id}`}
            className="text-indigo-600 hover:underline dark:text-indigo-400"
          >
            step {e.step}
          </Link>
        ))}
      </span>
    </li>
  );
}

/** The cluster's share of each step's failures, one bar a step read (full height: all of them). */
function SizeBars({ c }: { c: Cluster }) {
  const w = 6;
  const h = 24;
  return (
    <svg width={c.perStep.length * (w + 1)} height={h} role="img" aria-label={`share of failures per step, cluster ${c.index + 1}`}>
      {c.perStep.map((p, i) => {
        const share = p.failed ? p.size / p.failed : 0;
        return (
          <rect
            key={p.step}
            x={i * (w + 1)}
            y={h - Math.max(1, share * h)}
            width={w}
            height={Math.max(1, share * h)}
            className="fill-indigo-500 dark:fill-indigo-400"
          >
            <title>{`step ${p.step}: ${p.size} of ${p.failed} failures`}</title>
          </rect>
        );
      })}
    </svg>
  );
}
