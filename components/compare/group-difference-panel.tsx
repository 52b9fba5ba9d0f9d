"use client";
// "Difference of the two groups": with runs grouped into two or more groups of 2+ runs (a sweep's
// grid points: pick which two), group A minus group B for one metric at one step or at equal wall
// time (the same seconds since each run's start), from each run's stored values (use-group-difference.ts).
import { useState } from "react";
import type { RunGroup } from "@/lib/charts/prepare-compare";
import { colorAt } from "@/lib/charts/palette";
import type { RunOut } from "@/lib/schemas/runs";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";
import { GroupPairPicker } from "./group-pair-picker";
import { type DiffAt, useGroupDifference } from "./use-group-difference";

const num = (x: number) => (Number.isFinite(x) ? (Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : x.toFixed(4)) : "–");
const pval = (p: number) => (p < 1e-4 ? p.toExponential(2) : p.toFixed(4));

/** The panel, or nothing unless at least two groups have 2+ runs (with more, A and B are picked; default the first two). */
export function GroupDifferencePanel({ groups, runs, keys }: { groups: RunGroup[]; runs: RunOut[]; keys: string[] }) {
  const [pick, setPick] = useState<[number, number] | null>(null);
  const eligible = groups.flatMap((g, i) => (g.runIds.length >= 2 ? [i] : []));
  if (eligible.length < 2 || keys.length === 0) return null;
  const [ia, ib] = pick && pick[0] !== pick[1] && pick.every((i) => eligible.includes(i)) ? pick : [eligible[0], eligible[1]];
  const picker = groups.length > 2 ? <GroupPairPicker groups={groups} eligible={eligible} pair={[ia, ib]} setPair={setPick} /> : null;
  return <GroupDifferenceBody groups={[groups[ia], groups[ib]]} colors={[colorAt(ia), colorAt(ib)]} picker={picker} runs={runs} keys={keys} />;
}

type BodyProps = { groups: RunGroup[]; colors: string[]; picker: React.ReactNode; runs: RunOut[]; keys: string[] };

function GroupDifferenceBody({ groups, colors, picker, runs, keys }: BodyProps) {
  const { metric, setMetric, at, setAt, where, setInput, shared, loaded, failed, result, name } = useGroupDifference(groups, runs, keys);
  const missing = result ? [...result.a.missing, ...result.b.missing] : [];
  const whereText = at === "step" ? `step ${where}` : `${where} s after each run's start`;
  return (
    <section className={`${cardCls} space-y-2 p-3`} aria-labelledby="groupdiff-h" data-testid="group-difference" data-at={at}>
      <h2 id="groupdiff-h" className={labelCls}>
        Difference of the two groups
      </h2>
      <div className="flex flex-wrap items-center gap-x-5 gap-y-2 text-sm">
        {picker}
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">Metric</span>
          <select className={inputCls} value={metric} onChange={(e) => setMetric(e.target.value)} aria-label="Difference metric">
            {keys.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">At</span>
          <select className={inputCls} value={at} onChange={(e) => setAt(e.target.value as DiffAt)} aria-label="Difference at">
            <option value="step">equal steps</option>
            <option value="time">equal wall time</option>
          </select>
        </label>
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">{at === "step" ? "Step" : "Seconds"}</span>
          <input
            type="number"
            min={0}
            className={`${inputCls} w-28`}
            value={where ?? ""}
            list={at === "step" ? "groupdiff-steps" : undefined}
            onChange={(e) => setInput(e.target.value === "" ? null : Number(e.target.value))}
            aria-label={at === "step" ? "Difference step" : "Difference seconds"}
          />
          <datalist id="groupdiff-steps">
            {shared.steps.slice(-200).map((s) => (
              <option key={s} value={s} />
            ))}
          </datalist>
          <span className="text-xs text-zinc-500">
            {!loaded
              ? ""
              : at === "time"
                ? shared.seconds === null
                  ? "a run has no stored point"
                  : `every run ran at least ${shared.seconds} s (each run's value: its last point by then)`
                : shared.steps.length
                  ? `${shared.steps.length} step(s) shared by all runs, last ${shared.steps.at(-1)}`
                  : "no step shared by all runs"}
          </span>
        </label>
      </div>
      {failed ? (
        <p className="text-sm text-red-600" role="alert">
          {failed.message}
        </p>
      ) : !loaded ? (
        <p className="text-sm text-zinc-500">loading each run's stored values…</p>
      ) : !result ? (
        <p className="text-sm text-zinc-500">pick a {at === "step" ? "step" : "time"}</p>
      ) : (
        <div className="space-y-1.5 text-sm" data-testid="group-difference-result">
          <table className="text-sm">
            <tbody>
              {[result.a, result.b].map((g, i) => (
                <tr key={g.label} data-testid="group-difference-group">
                  <td className="pr-3">
                    <span className="mr-1.5 inline-block h-2.5 w-4 rounded-sm" style={{ background: colors[i] }} aria-hidden />
                    {i === 0 ? "A" : "B"}: {g.label}
                  </td>
                  <td className="pr-3 tabular-nums">n = {g.n}</td>
                  <td className="tabular-nums">
                    {num(g.mean)} ± {num(g.std)} (mean ± std)
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {result.ok ? (
            <p
              className="tabular-nums"
              data-testid="group-difference-stats"
              data-at={at}
              data-step={at === "step" ? (where ?? undefined) : undefined}
              data-seconds={at === "time" ? (where ?? undefined) : undefined}
              data-diff={result.welch.diff}
              data-ci-lo={result.welch.ci95[0]}
              data-ci-hi={result.welch.ci95[1]}
              data-welch-p={result.welch.p}
              data-permutation-p={result.permutation.p}
            >
              A − B = <b>{num(result.welch.diff)}</b>, 95 % CI [{num(result.welch.ci95[0])}, {num(result.welch.ci95[1])}] (Welch's t, df{" "}
              {result.welch.df.toFixed(1)}) · Welch p = {pval(result.welch.p)} · permutation p = {pval(result.permutation.p)} (
              {result.permutation.exact ? `exact, ${result.permutation.splits} splits` : `approximate, ${result.permutation.splits} random splits`})
            </p>
          ) : (
            <p className="text-zinc-500">{result.reason}</p>
          )}
          {missing.length ? (
            <p className="text-xs text-amber-700 dark:text-amber-400" data-testid="group-difference-missing">
              Left out (no stored value of {metric} at {whereText}): {missing.map(name).join(", ")}
            </p>
          ) : null}
        </div>
      )}
    </section>
  );
}
