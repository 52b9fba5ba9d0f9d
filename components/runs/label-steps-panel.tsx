"use client";
// Labels per step of a run as curves: how many of the step's trajectories carry each label of the
// project's set (on themselves or a turn), each step a link to its labelled trajectories in the search.
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { StepLineChart, type StepLine } from "@/components/charts/step-line-chart";
import { labelStepsQuery } from "@/lib/queries/labels";

const COLORS = ["#dc2626", "#d97706", "#4f46e5", "#059669", "#0891b2", "#7c3aed", "#65a30d", "#db2777", "#475569"];

export function LabelStepsPanel({ runId }: { runId: string }) {
  const { data } = useQuery(labelStepsQuery(runId));
  if (!data || data.points.length === 0) return null;
  const used = data.labels.filter((l) => data.points.some((p) => p.labelId === l.id));
  const steps = [...new Set(data.points.map((p) => p.step))].sort((a, b) => a - b);
  const lines: StepLine[] = used.map((l) => ({ key: l.id, name: l.name, color: COLORS[(l.position - 1) % COLORS.length] }));
  const rows = steps.map((step) => ({
    step,
    ...Object.fromEntries(used.map((l) => [l.id, data.points.find((p) => p.step === step && p.labelId === l.id)?.count ?? 0])),
  }));
  return (
    <section className="space-y-2" aria-label="Labels per step">
      <StepLineChart rows={rows} lines={lines} label="Labels per step" help="labelled trajectories at each step" testId="label-steps" legend />
      <p className="flex flex-wrap gap-2 text-xs">
        {used.map((l) => (
          <Link key={l.id} className="text-indigo-600 hover:underline dark:text-indigo-400" href={`/search?runs=${runId}&label=${encodeURIComponent(l.name)}`}>
            trajectories labelled {l.name} →
          </Link>
        ))}
      </p>
    </section>
  );
}
