"use client";
// The launch form's sweep mode: pick config params to vary with their values and the seeds; the
// form then launches every combination x every seed (POST /sweeps) and says how many runs first.
import { useMemo, useState } from "react";
import { flattenConfig } from "@/lib/charts/prepare-compare";
import { parseSeeds, parseValues } from "@/lib/forms/sweep-grid";
import { launchSweepSchema, sweepSize, SWEEP_LIMITS, type LaunchSweep } from "@/lib/schemas/sweeps";

const inputCls = "rounded-md border border-zinc-300 bg-white px-2.5 py-1.5 text-sm dark:border-zinc-700 dark:bg-zinc-900";
const SEED_PATH = "seed";

type Row = { path: string; values: string };

/** Config fields that belong to one value of another: varying that one sends them not, so each value takes its own defaults. */
const DEPENDENT: Record<string, string> = { estimator: "estimatorParams", envId: "envConfig" };
type LaunchBody = { jobKind: string; name?: string; tags: string[]; config: Record<string, unknown> };

/** The sweep's state: on or off, the varied rows, the seeds; the POST /sweeps body, its size and its errors. */
export function useSweepForm(body: LaunchBody) {
  const [on, setOn] = useState(false);
  const [rows, setRows] = useState<Row[]>([]);
  const [seeds, setSeeds] = useState("0, 1, 2");
  // the config's leaves, but the seed (the seeds list sets it)
  const paths = useMemo(() => Object.keys(flattenConfig(body.config)).filter((p) => p !== SEED_PATH), [body.config]);
  const seedList = parseSeeds(seeds);
  const values = rows.map((r) => parseValues(r.values));
  const errors: string[] = [];
  values.forEach((v, i) => {
    if (!v.ok) errors.push(`${rows[i].path || `param ${i + 1}`}: ${v.error}`);
  });
  if (!seedList.ok) errors.push(`seeds: ${seedList.error}`);
  if (rows.some((r) => !r.path)) errors.push("pick the config param of every row");
  const dropped = rows.map((r) => DEPENDENT[r.path]).filter((d): d is string => !!d && d in body.config);
  const config = Object.fromEntries(Object.entries(body.config).filter(([k]) => !dropped.includes(k)));
  const sweep: LaunchSweep | null =
    errors.length || !seedList.ok
      ? null
      : {
          ...launchSweepSchema.parse({ jobKind: body.jobKind, config: {}, seeds: [0] }),
          config,
          name: body.name,
          tags: body.tags,
          grid: rows.map((r, i) => ({ path: r.path, values: (values[i] as { ok: true; value: LaunchSweep["grid"][number]["values"] }).value })),
          seeds: seedList.value,
        };
  if (sweep) {
    const r = launchSweepSchema.safeParse(sweep);
    if (!r.success) for (const i of r.error.issues) errors.push(`${i.path.join(".")}: ${i.message}`);
  }
  const runs = sweepSize({ grid: values.map((v) => ({ values: v.ok ? v.value : [] })), seeds: seedList.ok ? seedList.value : [] });
  const edit = (i: number, r: Partial<Row>) => setRows((rs) => rs.map((x, j) => (j === i ? { ...x, ...r } : x)));
  return {
    on,
    setOn,
    rows,
    add: () => setRows((rs) => [...rs, { path: paths.find((p) => !rs.some((r) => r.path === p)) ?? "", values: "" }]),
    remove: (i: number) => setRows((rs) => rs.filter((_, j) => j !== i)),
    edit,
    seeds,
    setSeeds,
    paths,
    runs,
    dropped,
    counts: values.map((v) => (v.ok ? v.value.length : 0)),
    seedCount: seedList.ok ? seedList.value.length : 0,
    errors: on ? errors : [],
    body: on && !errors.length ? sweep : null,
  };
}
export type SweepForm = ReturnType<typeof useSweepForm>;

export function SweepBlock({ sw }: { sw: SweepForm }) {
  return (
    <section className="rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="section-Sweep">
      <label className="flex items-center gap-2 font-medium">
        <input type="checkbox" className="size-4 accent-indigo-600" checked={sw.on} onChange={(e) => sw.setOn(e.target.checked)} />
        Launch as a sweep
      </label>
      <p className="mt-1 text-sm text-zinc-500">
        Every combination of the values below, each with every seed, one run each (at most {SWEEP_LIMITS.runs}); the sweep opens grouped by its varied params,
        with the difference of two groups and its 95 % interval.
      </p>
      {sw.on ? (
        <div className="mt-3 space-y-2">
          {sw.rows.map((r, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place; a row's path may be edited
            <div key={i} className="flex flex-wrap items-center gap-2" data-testid="sweep-row">
              <select aria-label={`Varied param ${i + 1}`} value={r.path} onChange={(e) => sw.edit(i, { path: e.target.value })} className={`${inputCls} w-64`}>
                <option value="">pick a config param</option>
                {sw.paths.map((p) => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
              </select>
              <input
                aria-label={`Values of param ${i + 1}`}
                value={r.values}
                onChange={(e) => sw.edit(i, { values: e.target.value })}
                placeholder="values, comma separated: gigpo, grpo"
                className={`${inputCls} min-w-64 flex-1`}
              />
              <button type="button" onClick={() => sw.remove(i)} className="text-sm text-zinc-500 hover:text-red-600" aria-label={`Remove param ${i + 1}`}>
                remove
              </button>
            </div>
          ))}
          <button type="button" onClick={sw.add} className="text-sm text-indigo-600 hover:underline dark:text-indigo-400">
            + vary a param
          </button>
          <label className="flex items-center gap-2 text-sm">
            <span className="w-16 font-medium">seeds</span>
            <input
              aria-label="Sweep seeds"
              value={sw.seeds}
              onChange={(e) => sw.setSeeds(e.target.value)}
              placeholder="0, 1, 2 or 0-4"
              className={`${inputCls} w-48`}
            />
            <span className="text-zinc-500">a list (0, 1, 2) or a range (0-4)</span>
          </label>
          {sw.dropped.length ? (
            <p className="text-xs text-zinc-500" data-testid="sweep-dropped">
              Not sent: {sw.dropped.join(", ")} (each varied value takes its own defaults).
            </p>
          ) : null}
          <p className="text-sm font-medium tabular-nums" data-testid="sweep-size">
            {[...sw.counts.map((n) => `${n} value${n === 1 ? "" : "s"}`), `${sw.seedCount} seed${sw.seedCount === 1 ? "" : "s"}`].join(" × ")} = {sw.runs} run
            {sw.runs === 1 ? "" : "s"}
          </p>
          {sw.errors.map((e) => (
            <p key={e} className="text-xs text-red-600" role="alert" data-testid="sweep-error">
              {e}
            </p>
          ))}
        </div>
      ) : null}
    </section>
  );
}
