"use client";
// "In other runs": adds a run of the same project to the timeline (the runs are the URL's `runs`).
import { useQuery } from "@tanstack/react-query";
import { runQuery, runsPageQuery } from "@/lib/queries";
import { useUrlState } from "@/components/ui/use-url-state";
import { inputCls } from "@/components/ui/controls";

/** The timeline holds at most 10 runs (GET /tasks/timeline). */
const MAX_RUNS = 10;

export function RunPicker({ runs }: { runs: string[] }) {
  const { set } = useUrlState();
  const project = useQuery(runQuery(runs[0] ?? "")).data?.project;
  const others = useQuery({ ...runsPageQuery(project ? { project } : {}, 1), enabled: !!project }).data?.runs.filter((r) => !runs.includes(r.id)) ?? [];
  if (!others.length || runs.length >= MAX_RUNS) return null;
  return (
    <select
      aria-label="Add a run"
      className={`${inputCls} text-xs`}
      value=""
      onChange={(e) => e.target.value && set({ runs: [...runs, e.target.value].join(","), b: undefined })}
    >
      <option value="">+ the task in another run of {project}…</option>
      {others.map((r) => (
        <option key={r.id} value={r.id}>
          {r.name}
        </option>
      ))}
    </select>
  );
}
