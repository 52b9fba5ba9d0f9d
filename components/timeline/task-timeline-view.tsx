"use client";
// One task across training: per step of each run, the task's group (success rate, mean return,
// length, advantage) as curves and a table; a step slider showing that step's trajectories; two of
// them (any steps, any runs) picked as A and B for the side-by-side view below.
import Link from "next/link";
import { StepLineChart, type StepLine } from "@/components/charts/step-line-chart";
import { cardCls, labelCls } from "@/components/ui/controls";
import { fmt, fmtSigned } from "@/lib/charts/format";
import type { TaskTimeline } from "@/lib/schemas/timeline";
import { useTaskTimeline, type TaskTimelineState } from "./use-task-timeline";
import { TrajectoryDiffPanel } from "./trajectory-diff-panel";
import { RunPicker } from "./run-picker";

const COLORS = ["#4f46e5", "#d97706", "#059669", "#dc2626", "#0891b2", "#7c3aed", "#65a30d", "#db2777", "#475569", "#ea580c"];

export function TaskTimelineView() {
  const st = useTaskTimeline();
  const { data, timeline, task, runs } = st;
  if (!runs.length || (!task.task && !task.seed && !task.prompt))
    return (
      <p className="text-sm text-zinc-500">
        Open a task from a trajectory, a search hit or the task comparison: /tasks?runs=RUN&amp;task=UID (or &amp;prompt=TEXT, &amp;seed=N).
      </p>
    );
  if (timeline.error)
    return (
      <p className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
        {timeline.error.message}
      </p>
    );
  if (!data) return <p className="text-sm text-zinc-500">Loading the task's steps…</p>;
  const name = task.task ?? (task.prompt !== undefined ? promptName(task.prompt) : `seed ${task.seed}${task.envId ? ` (${task.envId})` : ""}`);
  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold">
          Task <span className="font-mono">{name}</span> across training
        </h1>
        <RunPicker runs={runs} />
      </div>
      {data.runs.every((r) => r.steps.length === 0) ? <p className="text-sm text-zinc-500">No step of these runs holds this task.</p> : <Curves data={data} />}
      <StepSlider st={st} />
      <TrajectoryDiffPanel st={st} />
    </div>
  );
}

/** A prompt as a title: its first 80 characters on one line, quoted. */
const promptName = (p: string) => {
  const line = p.trim().replace(/\s+/g, " ");
  return `“${line.length > 80 ? `${line.slice(0, 80)}…` : line}”`;
};

function Curves({ data }: { data: TaskTimeline }) {
  const steps = [...new Set(data.runs.flatMap((r) => r.steps.map((s) => s.step)))].sort((x, y) => x - y);
  const lines: StepLine[] = data.runs.map((r, i) => ({ key: `r${i}`, name: r.name, color: COLORS[i % COLORS.length] }));
  const rows = (f: (s: TaskTimeline["runs"][number]["steps"][number]) => number | null) =>
    steps.map((step) =>
      Object.fromEntries([["step", step], ...data.runs.map((r, i) => [`r${i}`, ((s) => (s ? f(s) : null))(r.steps.find((s) => s.step === step))])]),
    );
  return (
    <div className="grid gap-3 md:grid-cols-2 xl:grid-cols-4" data-testid="timeline-curves">
      <StepLineChart
        rows={rows((s) => s.successRate)}
        lines={lines}
        label="Success rate"
        help="of the task's trajectories at the step"
        testId="timeline-success"
        shares
        legend
      />
      <StepLineChart rows={rows((s) => s.meanReturn)} lines={lines} label="Return" help="mean over the group" testId="timeline-return" />
      <StepLineChart rows={rows((s) => s.meanLength)} lines={lines} label="Length" help="mean turns" testId="timeline-length" />
      <StepLineChart
        rows={rows((s) => s.meanAdvantage)}
        lines={lines}
        label="Advantage"
        help="mean stored advantage of the group's turns"
        testId="timeline-advantage"
      />
    </div>
  );
}

function StepSlider({ st }: { st: TaskTimelineState }) {
  const { data, steps, step, setStep, a, b, pick } = st;
  if (!data || step === undefined) return null;
  const i = steps.indexOf(step);
  return (
    <section className={`${cardCls} space-y-3 p-3`} aria-label="Trajectories at a step">
      <div className="flex flex-wrap items-center gap-3 text-sm">
        <label htmlFor="timeline-step" className={labelCls}>
          Step
        </label>
        <input
          id="timeline-step"
          type="range"
          min={0}
          max={steps.length - 1}
          value={i}
          onChange={(e) => setStep(steps[Number(e.target.value)])}
          className="w-72 accent-indigo-600"
          aria-valuetext={`step ${step}`}
        />
        <span className="font-mono tabular-nums" data-testid="timeline-step-value">
          step {step}
        </span>
        <span className="text-xs text-zinc-500">
          {i + 1} of {steps.length} steps holding the task · pick A and B to compare two trajectories
        </span>
      </div>
      {data.runs.map((r) => {
        const s = r.steps.find((x) => x.step === step);
        return (
          <div key={r.id} data-testid="timeline-step-run">
            <div className="mb-1 text-xs text-zinc-500">
              <Link className="text-indigo-600 hover:underline dark:text-indigo-400" href={`/runs/${r.id}`}>
                {r.name}
              </Link>
              {s
                ? ` · ${Math.round(s.successRate * 100)} % success · return ${fmt(s.meanReturn)} · ${fmt(s.meanLength)} turns · A ${fmtSigned(s.meanAdvantage)}`
                : " · not at this step"}
            </div>
            <div className="flex flex-wrap gap-2">
              {s?.trajectories.map((t) => (
                <div
                  key={t.id}
                  data-testid="timeline-trajectory"
                  className={`rounded border px-2 py-1 text-xs ${t.id === a || t.id === b ? "border-indigo-500 bg-indigo-50 dark:bg-indigo-950" : "border-zinc-200 dark:border-zinc-800"}`}
                >
                  <Link className="font-medium hover:underline" href={`/runs/${r.id}/trajectories?step=${step}&traj=${t.id}`}>
                    #{t.index} {t.success ? <span className="text-emerald-600">✓</span> : <span className="text-zinc-500">✗</span>}
                  </Link>
                  <span className="ml-1 tabular-nums text-zinc-500">
                    R {fmt(t.reward)} · {t.length} t · A {fmtSigned(t.meanAdvantage)}
                  </span>
                  {(["a", "b"] as const).map((k) => (
                    <button
                      type="button"
                      key={k}
                      onClick={() => pick(k, t.id)}
                      aria-pressed={(k === "a" ? a : b) === t.id}
                      className={`ml-1 rounded px-1 font-mono uppercase ${(k === "a" ? a : b) === t.id ? "bg-indigo-600 text-white" : "bg-zinc-100 hover:bg-zinc-200 dark:bg-zinc-800 dark:hover:bg-zinc-700"}`}
                    >
                      {k}
                    </button>
                  ))}
                </div>
              ))}
            </div>
          </div>
        );
      })}
    </section>
  );
}
