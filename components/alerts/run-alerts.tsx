"use client";
// The run page's alerts (nothing when the run has none).
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { runQuery } from "@/lib/queries";
import { alertsQuery } from "@/lib/queries/alerts";
import { cardCls } from "@/components/ui/controls";
import { AlertRows } from "./alert-rows";

export function RunAlerts({ runId }: { runId: string }) {
  const { data } = useQuery(alertsQuery({ runId, limit: 50 }));
  const projectId = useQuery(runQuery(runId)).data?.projectId;
  if (!data?.alerts.length) return null;
  return (
    <section className={`${cardCls} border-amber-300 dark:border-amber-700`} data-testid="run-alerts">
      <div className="flex items-baseline gap-3 border-b border-zinc-100 px-3 py-2 dark:border-zinc-800">
        <h2 className="text-sm font-medium">Alerts ({data.alerts.length})</h2>
        <Link href={`/monitors${projectId ? `?project=${projectId}` : ""}`} className="ml-auto text-xs text-indigo-600 hover:underline dark:text-indigo-400">
          The project's rules (Monitors) →
        </Link>
      </div>
      <AlertRows alerts={data.alerts} showRun={false} />
    </section>
  );
}
