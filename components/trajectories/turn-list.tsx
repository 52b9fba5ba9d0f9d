"use client";
// Every turn of a trajectory, readable: what the agent saw, what it did, what it got, the
// advantage (stored, and under a recomputed estimator when one is chosen), the action tinted by
// advantage, and the environment's board. Long trajectories render only the visible turns.
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { useWindowVirtualizer } from "@tanstack/react-virtual";
import type { TurnOut } from "@/lib/schemas/rollouts";
import type { EnvView as View } from "@/lib/envs/types";
import type { Theme } from "@/lib/charts/diverging";
import type { TokenTint } from "@/lib/charts/tokenize";
import { fmtSigned } from "@/lib/charts/format";
import { EnvView } from "./env-view";
import { LongText } from "./long-text";
import { TokenView } from "./token-view";
import { spanRows } from "./trace-spans";
import { estimateTurnHeight } from "./turn-height";

function num(v: number | null, digits = 3) {
  return v === null ? "—" : Number(v.toFixed(digits)).toString();
}

/** Above this many turns only the visible ones are in the DOM. */
const VIRTUAL_FROM = 40;

export interface TurnListProps {
  turns: TurnOut[];
  /** index of the turn to scroll to and highlight */
  highlight?: number | null;
  /** advantages under a recomputed estimator, per turn */
  recomputed?: { label: string; values: (number | null)[] } | null;
  /** colour domain of the advantage tint */
  max: number;
  /** what stored policy tokens are tinted by, and that tint's colour domain */
  tint: TokenTint;
  tintMax: number;
  theme: Theme;
  tokens: boolean;
}

export function TurnList(props: TurnListProps) {
  return props.turns.length > VIRTUAL_FROM ? <VirtualTurns {...props} /> : <PlainTurns {...props} />;
}

function PlainTurns(props: TurnListProps) {
  const refs = useRef<(HTMLLIElement | null)[]>([]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: new turns are new elements: scroll to the highlighted one again
  useEffect(() => {
    if (props.highlight === null || props.highlight === undefined) return;
    const el = refs.current[props.highlight];
    if (el) {
      el.scrollIntoView({ block: "start" });
      el.focus({ preventScroll: true });
    }
  }, [props.highlight, props.turns]);
  return (
    <ol className="space-y-3">
      {props.turns.map((t, i) => (
        <TurnCard
          key={t.seq}
          ref={(el) => {
            refs.current[i] = el;
          }}
          turn={t}
          {...props}
        />
      ))}
    </ol>
  );
}

function VirtualTurns(props: TurnListProps) {
  const list = useRef<HTMLOListElement>(null);
  const [margin, setMargin] = useState(0);
  const [width, setWidth] = useState(900);
  useLayoutEffect(() => {
    const el = list.current;
    if (!el) return;
    setMargin(el.getBoundingClientRect().top + window.scrollY);
    setWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const { turns, tokens, recomputed } = props;
  // each card's height from its texts (measured once drawn): the list's height is right before a turn is seen
  const estimateSize = useCallback(
    (i: number) => {
      const t = turns[i];
      const view = (t.info as { view?: View } | null)?.view;
      return estimateTurnHeight(
        { observation: t.observation, action: t.action, hasView: !!view, viewRows: view?.kind === "grid" ? view.cells.length : null },
        width,
        tokens && (!!t.tokens || t.advantage !== null || !!recomputed),
      );
    },
    [turns, width, tokens, recomputed],
  );
  const v = useWindowVirtualizer({ count: turns.length, estimateSize, overscan: 3, scrollMargin: margin, scrollPaddingStart: 64, gap: 12 });
  useEffect(() => {
    if (props.highlight !== null && props.highlight !== undefined && props.highlight < props.turns.length) v.scrollToIndex(props.highlight, { align: "start" });
  }, [props.highlight, props.turns.length, v]);
  return (
    <ol ref={list} style={{ height: v.getTotalSize(), position: "relative" }}>
      {v.getVirtualItems().map((it) => (
        <TurnCard
          key={props.turns[it.index].seq}
          ref={v.measureElement}
          data-index={it.index}
          turn={props.turns[it.index]}
          {...props}
          style={{ position: "absolute", top: 0, left: 0, right: 0, transform: `translateY(${it.start - v.options.scrollMargin}px)` }}
        />
      ))}
    </ol>
  );
}

function TurnCard({
  turn: t,
  highlight,
  recomputed,
  max,
  tint,
  tintMax,
  theme,
  tokens,
  ref,
  style,
  ...rest
}: TurnListProps & {
  turn: TurnOut;
  ref?: React.Ref<HTMLLIElement>;
  style?: React.CSSProperties;
  "data-index"?: number;
}) {
  const info = (t.info ?? {}) as { view?: View; spans?: unknown };
  const spans = spanRows(info.spans);
  const on = highlight === t.index;
  const re = recomputed?.values[t.index] ?? null;
  const adv = recomputed ? re : t.advantage;
  return (
    <li
      ref={ref}
      style={style}
      data-index={rest["data-index"]}
      id={`turn-${t.index}`}
      tabIndex={on ? -1 : undefined}
      data-testid="turn"
      data-highlight={on ? "true" : undefined}
      className={`scroll-mt-16 rounded-lg border bg-white p-3 outline-none dark:bg-zinc-900 ${on ? "border-indigo-500 ring-2 ring-indigo-400/60" : "border-zinc-200 dark:border-zinc-800"}`}
    >
      <div className="mb-2 flex flex-wrap items-center gap-3 text-xs text-zinc-500">
        <span className="font-semibold text-zinc-800 dark:text-zinc-200">Turn {t.index + 1}</span>
        <span>
          reward <b className="tabular-nums text-zinc-800 dark:text-zinc-200">{num(t.reward)}</b>
        </span>
        <span className={t.valid ? "text-emerald-600" : "text-red-600"}>{t.valid ? "valid action" : "invalid action"}</span>
        {t.advantage !== null ? (
          <span>
            advantage (stored) <b className="tabular-nums text-zinc-800 dark:text-zinc-200">{fmtSigned(t.advantage)}</b>
          </span>
        ) : (
          <span>no stored advantage</span>
        )}
        {recomputed ? (
          <span>
            {recomputed.label}{" "}
            <b className="tabular-nums text-zinc-800 dark:text-zinc-200" data-testid="turn-recomputed">
              {fmtSigned(re)}
            </b>
          </span>
        ) : null}
        {t.anchor !== null ? (
          <span className="max-w-64 truncate font-mono" title={t.anchor}>
            anchor {t.anchor}
          </span>
        ) : null}
        {t.tokenCount !== null ? <span>{t.tokenCount} tokens</span> : null}
        {t.agent !== null ? <span>player {t.agent}</span> : null}
        {t.done ? <span className="rounded bg-zinc-100 px-1 dark:bg-zinc-800">done</span> : null}
      </div>
      <div className="grid gap-3 md:grid-cols-[1fr_auto]">
        <div className="min-w-0 space-y-2">
          <div>
            <div className="text-[11px] uppercase tracking-wide text-zinc-500">Observation</div>
            <LongText text={t.observation} className="bg-zinc-50 dark:bg-zinc-950" label={`Observation of turn ${t.index + 1}`} />
          </div>
          <div>
            <div className="text-[11px] uppercase tracking-wide text-zinc-500">Action</div>
            {tokens && (t.tokens || adv !== null) ? (
              <TokenView
                text={t.action}
                advantage={adv}
                theme={theme}
                label={recomputed ? recomputed.label : "advantage"}
                // a recomputed estimator gives turn advantages: stored per-token ones belong to the training estimator
                tokens={t.tokens && recomputed ? { ...t.tokens, advantages: null } : t.tokens}
                tint={t.tokens ? tint : "advantage"}
                max={t.tokens && tint !== "advantage" ? tintMax : max}
              />
            ) : (
              <LongText
                text={t.action}
                className="bg-indigo-50 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-200"
                label={`Action of turn ${t.index + 1}`}
              />
            )}
          </div>
        </div>
        {info.view ? (
          <div className="shrink-0">
            <EnvView view={info.view} />
          </div>
        ) : null}
      </div>
      {spans.length ? (
        <details className="mt-2 text-xs text-zinc-600 dark:text-zinc-400" data-testid="turn-spans">
          <summary className="cursor-pointer select-none">
            {spans.length} trace span{spans.length === 1 ? "" : "s"}
          </summary>
          <ul className="mt-1 space-y-0.5">
            {spans.map((s, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: the list is fixed for the turn; spans need not carry ids
              <li key={i} style={{ paddingLeft: `${s.depth * 12}px` }}>
                <span className="font-mono text-zinc-800 dark:text-zinc-200">{s.name}</span>
                {s.detail ? <span> · {s.detail}</span> : null}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </li>
  );
}
