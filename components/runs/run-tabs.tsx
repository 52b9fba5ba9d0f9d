// The run's sections; each is its own shareable URL.
import Link from "next/link";

const TABS = [
  ["overview", "Overview", ""],
  ["trajectories", "Trajectories", "/trajectories"],
  ["credit", "Credit", "/credit"],
] as const;

export function RunTabs({ runId, active }: { runId: string; active: (typeof TABS)[number][0] }) {
  return (
    <nav className="flex gap-1 border-b border-zinc-200 dark:border-zinc-800" aria-label="Run sections">
      {TABS.map(([id, label, path]) => (
        <Link
          key={id}
          href={`/runs/${runId}${path}`}
          aria-current={id === active ? "page" : undefined}
          className={`-mb-px border-b-2 px-3 py-1.5 text-sm ${id === active ? "border-indigo-600 font-medium text-indigo-700 dark:text-indigo-300" : "border-transparent text-zinc-600 hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-white"}`}
        >
          {label}
        </Link>
      ))}
      <Link
        href={`/search?runs=${runId}`}
        className="-mb-px ml-auto border-b-2 border-transparent px-3 py-1.5 text-sm text-zinc-600 hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-white"
      >
        Search trajectories
      </Link>
    </nav>
  );
}
