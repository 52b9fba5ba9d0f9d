"use client";
// Two trajectories side by side: their turns aligned by index, a turn whose actions differ (or that
// only one has) marked, each turn's reward and stored advantage beside its action.
import { fmt, fmtSigned } from "@/lib/charts/format";
import type { TrajectoryDiff } from "@/lib/schemas/timeline";
import { cardCls, labelCls } from "@/components/ui/controls";
import type { TaskTimelineState } from "./use-task-timeline";

export function TrajectoryDiffPanel({ st }: { st: TaskTimelineState }) {
  const { a, b, diff } = st;
  if (!a || !b)
    return (
      <p className="text-sm text-zinc-500">
        {a || b ? "Pick the other trajectory (A or B) to see the two side by side." : "Pick two trajectories (A and B) to see them side by side."}
      </p>
    );
  if (diff.error) return <p className="text-sm text-red-600">{diff.error.message}</p>;
  const d = diff.data;
  if (!d) return <p className="text-sm text-zinc-500">Loading the two trajectories…</p>;
  return (
    <section className={`${cardCls} overflow-hidden`} aria-label="Two trajectories side by side" data-testid="trajectory-diff">
      <div className="flex flex-wrap items-center gap-3 border-b border-zinc-200 px-3 py-2 text-sm dark:border-zinc-800">
        <span className={labelCls}>Side by side</span>
        <span data-testid="diff-count">
          {d.differing} of {d.turns.length} turns act differently
        </span>
      </div>
      <div className="grid grid-cols-[3rem_1fr_1fr] text-xs">
        <div />
        <Head side={d.a} tag="A" />
        <Head side={d.b} tag="B" />
        {d.turns.map((u) => (
          <div key={u.index} className="contents" data-testid="diff-turn" data-differs={u.differs}>
            <div
              className={`border-t border-zinc-100 px-1 py-1 text-right tabular-nums dark:border-zinc-800 ${u.differs ? "bg-amber-100 font-semibold text-amber-900 dark:bg-amber-900/40 dark:text-amber-200" : "text-zinc-500"}`}
            >
              {u.differs ? "≠ " : ""}t{u.index + 1}
            </div>
            <Cell turn={u.a} differs={u.differs} />
            <Cell turn={u.b} differs={u.differs} />
          </div>
        ))}
      </div>
    </section>
  );
}

function Head({ side, tag }: { side: TrajectoryDiff["a"]; tag: string }) {
  return (
    <div className="border-l border-zinc-100 px-2 py-1.5 dark:border-zinc-800">
      <span className="font-mono font-semibold">{tag}</span> {side.runName} · step {side.step} · #{side.index}{" "}
      {side.success ? <span className="text-emerald-600">✓ success</span> : <span className="text-zinc-500">✗</span>} · R {fmt(side.reward)} · {side.length}{" "}
      turns
    </div>
  );
}

function Cell({ turn, differs }: { turn: TrajectoryDiff["turns"][number]["a"]; differs: boolean }) {
  if (!turn) return <div className="border-l border-t border-zinc-100 bg-zinc-50 px-2 py-1 text-zinc-400 dark:border-zinc-800 dark:bg-zinc-900">no turn</div>;
  return (
    <div
      className={`flex gap-2 border-l border-t border-zinc-100 px-2 py-1 dark:border-zinc-800 ${differs ? "bg-amber-50 dark:bg-amber-950/30" : ""}`}
      title={turn.observation}
    >
      <span className="min-w-0 flex-1 truncate font-mono">{turn.action}</span>
      <span className="shrink-0 tabular-nums text-zinc-500">
        r {fmt(turn.reward)} · A {fmtSigned(turn.advantage, 2)}
      </span>
    </div>
  );
}
