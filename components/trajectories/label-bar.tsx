"use client";
// Labels of the trajectory shown, from the keyboard: a digit 1-9 toggles that label of the
// project's set on the trajectory, Shift+digit on the selected turn; `c` writes a note on the label
// last applied (Enter saves, Escape leaves). A label set is made here too (the first label).
import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { callRoute } from "@/lib/client/api";
import { routes, runQuery } from "@/lib/queries";
import { labelsQuery, trajectoryLabelsQuery } from "@/lib/queries/labels";
import type { TrajectoryLabelOut } from "@/lib/schemas/labels";
import { btnCls, cardCls, inputCls, labelCls } from "@/components/ui/controls";

/** The label bar's state: the set, the labels on this trajectory, and toggling and noting them. */
function useLabels(runId: string, trajId: string | undefined, turn: number | null) {
  const qc = useQueryClient();
  const project = useQuery(runQuery(runId)).data?.project ?? "";
  const set = useQuery(labelsQuery(project)).data?.labels ?? [];
  const on = useQuery({ ...trajectoryLabelsQuery(trajId ?? ""), enabled: !!trajId }).data?.labels ?? [];
  const [last, setLast] = useState<TrajectoryLabelOut | null>(null);
  const refresh = () => {
    qc.invalidateQueries({ queryKey: ["trajectory", trajId, "labels"] });
    qc.invalidateQueries({ queryKey: ["labels", project] });
    qc.invalidateQueries({ queryKey: ["run", runId, "label-steps"] });
  };
  const toggle = useMutation({
    mutationFn: async ({ labelId, turn }: { labelId: string; turn: number | null }) => {
      const had = on.find((l) => l.labelId === labelId && l.turn === turn);
      if (had) {
        await callRoute(routes.trajectoryLabelRemove, { params: { id: trajId!, labelId }, query: turn === null ? {} : { turn } });
        return null;
      }
      return callRoute(routes.trajectoryLabelApply, { params: { id: trajId! }, body: { labelId, turn } });
    },
    onSuccess: (l) => (setLast(l), refresh()),
  });
  const note = useMutation({
    mutationFn: (n: { l: TrajectoryLabelOut; note: string }) =>
      callRoute(routes.trajectoryLabelApply, { params: { id: trajId! }, body: { labelId: n.l.labelId, turn: n.l.turn, note: n.note } }),
    onSuccess: (l) => (setLast(l), refresh()),
  });
  const create = useMutation({ mutationFn: (name: string) => callRoute(routes.labelCreate, { body: { project, name } }), onSuccess: refresh });
  const pick = (digit: number, onTurn: boolean) => {
    const l = set.find((x) => x.position === digit);
    if (l && trajId && (!onTurn || turn !== null)) toggle.mutate({ labelId: l.id, turn: onTurn ? turn : null });
  };
  const noteTarget = (last && on.find((l) => l.id === last.id)) ?? on[on.length - 1] ?? null;
  const error = toggle.error ?? note.error ?? create.error;
  return { project, set, on, pick, noteTarget, note, create, error, turn };
}
type Labels = ReturnType<typeof useLabels>;

export function LabelBar({ runId, trajId, turn }: { runId: string; trajId: string | undefined; turn: number | null }) {
  const st = useLabels(runId, trajId, turn);
  const [noting, setNoting] = useState(false);
  const { pick, noteTarget } = st;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const el = e.target as HTMLElement;
      if (e.metaKey || e.ctrlKey || e.altKey || ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName) || el.isContentEditable) return;
      const digit = /^Digit([1-9])$/.exec(e.code);
      if (digit) pick(Number(digit[1]), e.shiftKey);
      else if (e.key === "c" && noteTarget) setNoting(true);
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [pick, noteTarget]);
  return (
    <div className={`${cardCls} space-y-2 p-3 text-sm`} data-testid="label-bar">
      <div className="flex flex-wrap items-center gap-2">
        <span className={labelCls}>Labels</span>
        {st.set.map((l) => (
          <span key={l.id} className="rounded border border-zinc-300 px-1.5 text-xs text-zinc-600 dark:border-zinc-700 dark:text-zinc-300">
            <kbd className="font-mono font-semibold">{l.position}</kbd> {l.name}
          </span>
        ))}
        <NewLabel st={st} />
      </div>
      <ul className="flex flex-wrap gap-1.5" aria-label="Labels on this trajectory">
        {st.on.map((l) => (
          <li
            key={l.id}
            data-testid="applied-label"
            className="rounded bg-amber-100 px-2 py-0.5 text-xs text-amber-900 dark:bg-amber-900/40 dark:text-amber-200"
          >
            {l.name}
            {l.turn === null ? "" : ` · turn ${l.turn + 1}`}
            {l.note ? <span className="italic"> — {l.note}</span> : null}
          </li>
        ))}
        {st.on.length === 0 ? <li className="text-xs text-zinc-500">none</li> : null}
      </ul>
      {noting && noteTarget ? <NoteInput st={st} target={noteTarget} done={() => setNoting(false)} /> : null}
      {st.error ? <p className="text-xs text-red-600">{st.error.message}</p> : null}
      <p className="text-xs text-zinc-500">
        <kbd>1</kbd>–<kbd>9</kbd> label the trajectory · <kbd>Shift</kbd>+digit the selected turn{turn === null ? " (pick one first)" : ""} · <kbd>c</kbd> note
      </p>
    </div>
  );
}

function NoteInput({ st, target, done }: { st: Labels; target: TrajectoryLabelOut; done: () => void }) {
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <label className="flex items-center gap-2 text-xs">
      note on {target.name}
      {target.turn === null ? "" : ` (turn ${target.turn + 1})`}
      <input
        ref={ref}
        aria-label="Label note"
        maxLength={1000}
        defaultValue={target.note}
        className={`${inputCls} flex-1`}
        onKeyDown={(e) => {
          if (e.key === "Enter") st.note.mutate({ l: target, note: e.currentTarget.value }, { onSuccess: done });
          else if (e.key === "Escape") done();
        }}
      />
    </label>
  );
}

function NewLabel({ st }: { st: Labels }) {
  const [name, setName] = useState("");
  if (st.set.length >= 9 || !st.project) return null;
  return (
    <form
      className="ml-auto flex items-center gap-1"
      onSubmit={(e) => {
        e.preventDefault();
        if (name.trim()) st.create.mutate(name.trim(), { onSuccess: () => setName("") });
      }}
    >
      <input
        aria-label="New label"
        placeholder="new label"
        maxLength={40}
        value={name}
        onChange={(e) => setName(e.target.value)}
        className={`${inputCls} w-32 py-0.5 text-xs`}
      />
      <button type="submit" className={`${btnCls} py-0.5 text-xs`}>
        add
      </button>
    </form>
  );
}
