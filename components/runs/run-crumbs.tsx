"use client";
// Breadcrumb + run name line shared by the run's sub-pages.
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { runQuery } from "@/lib/queries";
import { StatusBadge } from "@/components/ui/status-badge";
import { RunTabs } from "./run-tabs";

export function RunCrumbs({ runId, section, active }: { runId: string; section: string; active: "overview" | "trajectories" | "credit" }) {
  const { data: run } = useQuery(runQuery(runId));
  return (
    <div className="space-y-2">
      <div className="text-xs text-zinc-500">
        <Link href="/runs" className="hover:underline">
          Runs
        </Link>{" "}
        /{" "}
        <Link href={`/runs/${runId}`} className="hover:underline">
          {run?.name ?? runId}
        </Link>{" "}
        / {section}
      </div>
      <div className="flex flex-wrap items-center gap-2">
        <h1 className="truncate text-lg font-semibold tracking-tight">{run?.name ?? "…"}</h1>
        {run ? <StatusBadge status={run.status} /> : null}
        {run?.estimator ? <span className="rounded bg-zinc-100 px-1.5 font-mono text-xs dark:bg-zinc-800">{run.estimator}</span> : null}
        {run?.envId ? <span className="font-mono text-xs text-zinc-500">{run.envId}</span> : null}
      </div>
      <RunTabs runId={runId} active={active} />
    </div>
  );
}
