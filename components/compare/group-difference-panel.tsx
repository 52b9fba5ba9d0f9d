"use client";
// "Difference of the two groups": with runs grouped into exactly two groups of 2+ runs, group A
// minus group B for one metric at one step, from each run's stored value at that step (the
// export's full-resolution points, never the chart's downsampled or smoothed ones).
import { useMemo, useState } from "react";
import { useQueries } from "@tanstack/react-query";
import { metricExactQuery } from "@/lib/queries";
import type { RunGroup } from "@/lib/charts/prepare-compare";
import { colorAt } from "@/lib/charts/palette";
import type { RunOut } from "@/lib/schemas/runs";
import { groupDifference, valueAtStep } from "@/lib/stats/group-difference";
import { cardCls, inputCls, labelCls } from "@/components/ui/controls";

const num = (x: number) => (Number.isFinite(x) ? (Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : x.toFixed(4)) : "–");
const pval = (p: number) => (p < 1e-4 ? p.toExponential(2) : p.toFixed(4));

/** The panel, or nothing unless the grouping has exactly two groups of at least 2 runs each. */
export function GroupDifferencePanel({ groups, runs, keys }: { groups: RunGroup[]; runs: RunOut[]; keys: string[] }) {
  if (groups.length !== 2 || groups.some((g) => g.runIds.length < 2) || keys.length === 0) return null;
  return <GroupDifferenceBody groups={groups} runs={runs} keys={keys} />;
}

function GroupDifferenceBody({ groups, runs, keys }: { groups: RunGroup[]; runs: RunOut[]; keys: string[] }) {
  const [metric, setMetric] = useState(() => keys.find((k) => k.startsWith("eval/")) ?? keys[0]);
  const [stepInput, setStepInput] = useState<number | null>(null);
  const ids = [...groups[0].runIds, ...groups[1].runIds];
  const exact = useQueries({ queries: ids.map((id) => metricExactQuery(id, metric)) });
  const loaded = exact.every((q) => q.data);
  const failed = exact.find((q) => q.error)?.error;
  const byRun = new Map(ids.map((id, i) => [id, exact[i].data]));
  // steps every run has a point at; the default is the last of them (the last step all runs reached)
  // biome-ignore lint/correctness/useExhaustiveDependencies: the queries are compared by their update times (useQueries returns a new array each render)
  const shared = useMemo(() => {
    if (!loaded) return [];
    const sets = ids.map((id) => new Set(byRun.get(id)?.steps ?? []));
    return [...sets[0]].filter((s) => sets.every((x) => x.has(s))).sort((a, b) => a - b);
  }, [loaded, exact.map((q) => q.dataUpdatedAt).join()]);
  const step = stepInput ?? (shared.length ? shared[shared.length - 1] : null);
  const name = (id: string) => runs.find((r) => r.id === id)?.name ?? id;
  // biome-ignore lint/correctness/useExhaustiveDependencies: as above
  const result = useMemo(() => {
    if (!loaded || step === null) return null;
    const sample = (g: RunGroup) => ({
      label: g.label,
      values: g.runIds.map((id) => {
        const d = byRun.get(id);
        return { runId: id, value: d ? valueAtStep(d.steps, d.values, step) : undefined };
      }),
    });
    return groupDifference(sample(groups[0]), sample(groups[1]));
  }, [loaded, step, groups, exact.map((q) => q.dataUpdatedAt).join()]);
  const missing = result ? [...result.a.missing, ...result.b.missing] : [];
  return (
    <section className={`${cardCls} space-y-2 p-3`} aria-labelledby="groupdiff-h" data-testid="group-difference">
      <h2 id="groupdiff-h" className={labelCls}>
        Difference of the two groups
      </h2>
      <div className="flex flex-wrap items-center gap-x-5 gap-y-2 text-sm">
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">Metric</span>
          <select
            className={inputCls}
            value={metric}
            onChange={(e) => {
              setMetric(e.target.value);
              setStepInput(null);
            }}
            aria-label="Difference metric"
          >
            {keys.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label className="flex items-center gap-2">
          <span className="text-zinc-500">Step</span>
          <input
            type="number"
            className={`${inputCls} w-28`}
            value={step ?? ""}
            list="groupdiff-steps"
            onChange={(e) => setStepInput(e.target.value === "" ? null : Number(e.target.value))}
            aria-label="Difference step"
          />
          <datalist id="groupdiff-steps">
            {shared.slice(-200).map((s) => (
              <option key={s} value={s} />
            ))}
          </datalist>
          <span className="text-xs text-zinc-500">
            {shared.length ? `${shared.length} step(s) shared by all runs, last ${shared[shared.length - 1]}` : loaded ? "no step shared by all runs" : ""}
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
        <p className="text-sm text-zinc-500">pick a step</p>
      ) : (
        <div className="space-y-1.5 text-sm" data-testid="group-difference-result">
          <table className="text-sm">
            <tbody>
              {[result.a, result.b].map((g, i) => (
                <tr key={g.label} data-testid="group-difference-group">
                  <td className="pr-3">
                    <span className="mr-1.5 inline-block h-2.5 w-4 rounded-sm" style={{ background: colorAt(i) }} aria-hidden />
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
              data-step={step ?? undefined}
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
              Left out (no stored value of {metric} at step {step}): {missing.map(name).join(", ")}
            </p>
          ) : null}
        </div>
      )}
    </section>
  );
}
