"use client";
// Alerts as rows: the rule, what it saw, the step it began at (a link to that step's failed
// trajectories) and whether it still holds. The runs list shows every run's, the run page its own.
import Link from "next/link";
import type { Alert } from "@/lib/schemas/alerts";

/** The trajectories of the alert's step, failures first: what a collapse looks like there. */
export const alertTrajectoriesHref = (a: Pick<Alert, "runId" | "step">) => `/runs/${a.runId}/trajectories?step=${a.step}&outcome=failure`;

export function AlertRows({ alerts, showRun }: { alerts: readonly Alert[]; showRun: boolean }) {
  return (
    <ul className="divide-y divide-zinc-100 text-sm dark:divide-zinc-800">
      {alerts.map((a) => (
        <li key={a.id} className="flex flex-wrap items-baseline gap-x-3 gap-y-1 px-3 py-2" data-testid="alert-row">
          <span
            className={`rounded px-1.5 text-xs font-medium ${a.open ? "bg-amber-100 text-amber-800 dark:bg-amber-900/50 dark:text-amber-200" : "bg-zinc-100 text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300"}`}
          >
            {a.open ? "active" : "ended"}
          </span>
          <span className="font-medium">{a.ruleName ?? a.ruleId}</span>
          {showRun ? (
            <Link href={`/runs/${a.runId}`} className="text-indigo-600 hover:underline dark:text-indigo-400">
              {a.runName}
            </Link>
          ) : null}
          <Link href={alertTrajectoriesHref(a)} className="font-mono text-xs text-indigo-600 hover:underline dark:text-indigo-400">
            step {a.step}
            {a.lastStep > a.step ? `–${a.lastStep}` : ""}
          </Link>
          <span className="min-w-0 flex-1 text-zinc-600 dark:text-zinc-400">{a.message}</span>
          {a.webhookState !== "none" ? <span className="text-xs text-zinc-500">webhook {a.webhookState}</span> : null}
        </li>
      ))}
    </ul>
  );
}
