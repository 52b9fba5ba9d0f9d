"use client";
// The runs list's alerts: the most recent ones of every run, shown above the table when there are any.
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { alertsQuery } from "@/lib/queries/alerts";
import { cardCls } from "@/components/ui/controls";
import { AlertRows } from "./alert-rows";

export function RecentAlerts() {
  const { data } = useQuery(alertsQuery({ limit: 8 }));
  if (!data?.alerts.length) return null;
  return (
    <section className={`${cardCls} border-amber-300 dark:border-amber-700`} data-testid="recent-alerts">
      <div className="flex items-baseline gap-3 border-b border-zinc-100 px-3 py-2 dark:border-zinc-800">
        <h2 className="text-sm font-medium">Alerts</h2>
        <Link href="/monitors" className="ml-auto text-xs text-indigo-600 hover:underline dark:text-indigo-400">
          Edit the rules (Monitors) →
        </Link>
      </div>
      <AlertRows alerts={data.alerts} showRun />
    </section>
  );
}
