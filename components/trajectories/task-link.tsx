"use client";
// "This task across training": the link to the task timeline names the task by its uid where the
// uid recurs at another step of the run (an environment's task id), else by the trajectory's prompt
// (its first observation): trainers such as verl and TRL draw a fresh uid at every step (a uuid, a
// batch index), so only the prompt finds the same task at other steps.
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { groupsQuery } from "@/lib/queries";
import { MAX_PROMPT } from "@/lib/schemas/timeline";

export function TaskTimelineLink({
  runId,
  step,
  steps,
  uid,
  prompt,
  trajId,
}: {
  runId: string;
  step: number;
  /** the run's steps */
  steps: readonly number[];
  uid: string;
  /** the shown trajectory's first observation (undefined while it loads) */
  prompt: string | undefined;
  trajId: string | undefined;
}) {
  const at = steps.indexOf(step);
  const other = steps[at + 1] ?? steps[at - 1];
  const otherGroups = useQuery({ ...groupsQuery(runId, other ?? -1), enabled: other !== undefined }).data;
  const text = prompt?.trim() ?? "";
  const byPrompt =
    other !== undefined && otherGroups !== undefined && !otherGroups.groups.some((g) => g.uid === uid) && text.length > 0 && text.length <= MAX_PROMPT;
  const task = byPrompt ? `prompt=${encodeURIComponent(text)}` : `task=${encodeURIComponent(uid)}`;
  return (
    <Link
      className="text-indigo-600 hover:underline dark:text-indigo-400"
      href={`/tasks?runs=${runId}&${task}${trajId ? `&a=${trajId}` : ""}`}
      title={byPrompt ? "the uid is not at other steps: the task is found by its prompt (first observation)" : "the task is found by its uid"}
    >
      This task across training →
    </Link>
  );
}
