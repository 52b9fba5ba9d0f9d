"use client";
// Two runs (or two evaluations) on the same tasks: the tasks the later one newly solves, newly
// fails, still fails and still solves, each with both runs' successes and a link to a trajectory
// of each (the first success, else the first failure). Runs in the URL (?a=&b=).
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { taskCompareQuery } from "@/lib/queries";
import type { TaskCompare, TaskOutcome } from "@/lib/schemas/task-compare";
import { useUrlState } from "@/components/ui/use-url-state";
import { cardCls, labelCls } from "@/components/ui/controls";

const SECTIONS: { k: "newlySolved" | "newlyFailed" | "persistentFailures" | "stillSolved"; label: string; help: string; tone: string }[] = [
  { k: "newlySolved", label: "Newly solved", help: "no success in A, at least one in B", tone: "text-emerald-700 dark:text-emerald-400" },
  { k: "newlyFailed", label: "Newly failed", help: "at least one success in A, none in B: regressions", tone: "text-red-700 dark:text-red-400" },
  { k: "persistentFailures", label: "Persistent failures", help: "no success in either run", tone: "text-amber-700 dark:text-amber-400" },
  { k: "stillSolved", label: "Still solved", help: "at least one success in both", tone: "text-zinc-600 dark:text-zinc-400" },
];

export function TaskCompareView() {
  const { get } = useUrlState();
  const a = get("a") ?? "";
  const b = get("b") ?? "";
  const { data, error, isFetching } = useQuery(taskCompareQuery(a, b));
  if (!a || !b) return <p className="text-sm text-zinc-500">Choose two runs: /compare/tasks?a=RUN&amp;b=RUN (or open Compare with two runs).</p>;
  if (error)
    return (
      <p className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
        {error.message}
      </p>
    );
  if (!data) return <p className="text-sm text-zinc-500">{isFetching ? "Comparing…" : ""}</p>;
  return (
    <div className="space-y-4">
      <h1 className="text-lg font-semibold">
        Tasks:{" "}
        <Link className="text-indigo-600 hover:underline dark:text-indigo-400" href={`/runs/${data.a.id}`}>
          {data.a.name}
        </Link>{" "}
        (A) →{" "}
        <Link className="text-indigo-600 hover:underline dark:text-indigo-400" href={`/runs/${data.b.id}`}>
          {data.b.name}
        </Link>{" "}
        (B)
      </h1>
      <p className="text-sm text-zinc-500">
        A task counts as solved in a run when any of its trajectories succeeded. Matched by{" "}
        {data.matchedBy === "taskSeed" ? "environment and task seed" : "group uid (the runs sent no task seeds)"}
        {data.onlyA || data.onlyB ? `; ${data.onlyA} task(s) only in A and ${data.onlyB} only in B are left out` : ""}.
      </p>
      <div className="grid gap-3 sm:grid-cols-4" data-testid="task-compare-counts">
        {SECTIONS.map((s) => (
          <a key={s.k} href={`#${s.k}`} className={`${cardCls} block p-3`}>
            <div className={`text-2xl font-semibold tabular-nums ${s.tone}`} data-testid={`count-${s.k}`}>
              {data[s.k].length}
            </div>
            <div className="text-sm font-medium">{s.label}</div>
            <div className="text-xs text-zinc-500">{s.help}</div>
          </a>
        ))}
      </div>
      {SECTIONS.map((s) => (data[s.k].length ? <Section key={s.k} id={s.k} label={s.label} rows={data[s.k]} d={data} /> : null))}
    </div>
  );
}

function Section({ id, label, rows, d }: { id: string; label: string; rows: TaskOutcome[]; d: TaskCompare }) {
  const cell = (runId: string, side: TaskOutcome["a"]) =>
    side ? (
      <span className="tabular-nums">
        {side.successes}/{side.trajectories} succeeded ·{" "}
        <Link className="text-indigo-600 hover:underline dark:text-indigo-400" href={`/runs/${runId}/trajectories?traj=${side.trajectoryId}`}>
          {side.successes ? "a success" : "a failure"}
        </Link>
      </span>
    ) : (
      "—"
    );
  return (
    <section id={id} aria-label={label} className={`${cardCls} p-3`} data-testid={`tasks-${id}`}>
      <h2 className={`${labelCls} mb-2`}>
        {label} ({rows.length})
      </h2>
      <table className="w-full table-fixed text-sm">
        <thead className="text-left text-zinc-500">
          <tr>
            <th className="w-1/4 py-1 font-normal">task</th>
            <th className="py-1 font-normal">A: {d.a.name}</th>
            <th className="py-1 font-normal">B: {d.b.name}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.key} className="border-t border-zinc-100 dark:border-zinc-800">
              <td className="py-1 font-mono text-xs">
                {d.matchedBy === "taskSeed" ? `${t.envId} · seed ${t.taskSeed}` : t.uid}{" "}
                <Link
                  className="font-sans text-indigo-600 hover:underline dark:text-indigo-400"
                  href={`/tasks?runs=${d.a.id},${d.b.id}&${d.matchedBy === "taskSeed" ? `seed=${t.taskSeed}&envId=${encodeURIComponent(t.envId)}` : `task=${encodeURIComponent(t.uid)}`}${t.a && t.b ? `&a=${t.a.trajectoryId}&b=${t.b.trajectoryId}` : ""}`}
                >
                  over training
                </Link>
              </td>
              <td className="py-1">{cell(d.a.id, t.a)}</td>
              <td className="py-1">{cell(d.b.id, t.b)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
