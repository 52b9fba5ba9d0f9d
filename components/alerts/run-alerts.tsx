"use client";
// The run page's alerts (nothing when the run has none).
import { useQuery } from "@tanstack/react-query";
import { alertsQuery } from "@/lib/queries/alerts";
import { cardCls } from "@/components/ui/controls";
import { AlertRows } from "./alert-rows";

export function RunAlerts({ runId }: { runId: string }) {
  const { data } = useQuery(alertsQuery({ runId, limit: 50 }));
  if (!data?.alerts.length) return null;
  return (
    <section className={`${cardCls} border-amber-300 dark:border-amber-700`} data-testid="run-alerts">
      <h2 className="border-b border-zinc-100 px-3 py-2 text-sm font-medium dark:border-zinc-800">Alerts ({data.alerts.length})</h2>
      <AlertRows alerts={data.alerts} showRun={false} />
    </section>
  );
}
