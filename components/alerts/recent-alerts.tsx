"use client";
// The runs list's alerts: the most recent ones of every run, shown above the table when there are any.
import { useQuery } from "@tanstack/react-query";
import { alertsQuery } from "@/lib/queries/alerts";
import { cardCls } from "@/components/ui/controls";
import { AlertRows } from "./alert-rows";

export function RecentAlerts() {
  const { data } = useQuery(alertsQuery({ limit: 8 }));
  if (!data?.alerts.length) return null;
  return (
    <section className={`${cardCls} border-amber-300 dark:border-amber-700`} data-testid="recent-alerts">
      <h2 className="border-b border-zinc-100 px-3 py-2 text-sm font-medium dark:border-zinc-800">Alerts</h2>
      <AlertRows alerts={data.alerts} showRun />
    </section>
  );
}
