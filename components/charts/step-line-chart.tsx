"use client";
// The small chart of the credit views: a few lines over training steps in a captioned card (batch
// diagnostics over training, turn diagnostics by turn index). Shares are drawn on [0, 1], anything
// else on a padded round domain (niceScale).
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { niceScale } from "@/lib/charts/domain";
import { fmt, tickFormat } from "@/lib/charts/format";
import { cardCls } from "@/components/ui/controls";

export interface StepLine {
  /** the row field holding this line's values */
  key: string;
  name: string;
  color: string;
  dashed?: boolean;
}

const SHARE_SCALE = { domain: [0, 1] as [number, number], ticks: [0, 0.25, 0.5, 0.75, 1] };

/** `rows`: one per training step, `{ step, [line.key]: value | null }`. */
export function StepLineChart({
  rows,
  lines,
  label,
  help,
  testId,
  shares = false,
  format = fmt,
  legend = false,
  heightCls = "h-36",
}: {
  rows: Record<string, number | null>[];
  lines: StepLine[];
  label: string;
  help: string;
  testId: string;
  shares?: boolean;
  format?: (v: number | null) => string;
  legend?: boolean;
  heightCls?: string;
}) {
  const any = rows.some((r) => lines.some((l) => r[l.key] !== null && r[l.key] !== undefined));
  const scale = shares ? SHARE_SCALE : niceScale(rows.flatMap((r) => lines.map((l) => r[l.key] ?? null)));
  return (
    <figure className={`${cardCls} p-3`} data-testid={testId}>
      <figcaption className="mb-1 text-sm font-medium" title={help}>
        {label} <span className="font-normal text-zinc-500">· {help}</span>
      </figcaption>
      {any ? (
        <div className={heightCls}>
          <ResponsiveContainer width="100%" height="100%">
            <LineChart data={rows} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
              <CartesianGrid strokeDasharray="3 3" stroke="currentColor" strokeOpacity={0.12} />
              <XAxis
                dataKey="step"
                type="number"
                domain={["dataMin", "dataMax"]}
                allowDecimals={false}
                tick={{ fontSize: 11 }}
                stroke="currentColor"
                strokeOpacity={0.5}
              />
              <YAxis
                tick={{ fontSize: 11 }}
                width={48}
                tickFormatter={scale ? tickFormat(scale.ticks) : fmt}
                interval={0}
                stroke="currentColor"
                strokeOpacity={0.5}
                domain={scale?.domain ?? ["auto", "auto"]}
                ticks={scale?.ticks}
              />
              <Tooltip formatter={(v) => format(v === null ? null : Number(v))} labelFormatter={(s) => `step ${s}`} contentStyle={{ fontSize: 12 }} />
              {lines.map((l) => (
                <Line
                  key={l.key}
                  type="linear"
                  dataKey={l.key}
                  name={l.name}
                  stroke={l.color}
                  strokeWidth={1.5}
                  strokeDasharray={l.dashed ? "4 3" : undefined}
                  dot={!l.dashed && rows.length < 40}
                  isAnimationActive={false}
                  connectNulls={false}
                />
              ))}
            </LineChart>
          </ResponsiveContainer>
        </div>
      ) : (
        <p className="py-6 text-center text-sm text-zinc-500">not available for this data</p>
      )}
      {legend && lines.length > 1 && any ? (
        <div className="mt-1 flex flex-wrap gap-3 text-xs text-zinc-500">
          {lines.map((l) => (
            <span key={l.key} className="flex items-center gap-1">
              <span className="inline-block h-0.5 w-4" style={{ background: l.color }} aria-hidden />
              {l.name}
            </span>
          ))}
        </div>
      ) : null}
    </figure>
  );
}
