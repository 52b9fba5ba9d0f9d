"use client";
// A heatmap on the diverging scale (lib/charts/diverging): SVG cells, a gap pattern where a value
// is missing, optional markers (GiGPO anchor groups), a hover/keyboard cursor with a tooltip, and
// outlined cells (the hovered cell's anchor group). Keyboard: arrows move, Home/End, PageUp/Down,
// Enter opens. The cell layer is memoised so hovering redraws only the overlay.
import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { divergingColor, textOn, type Theme } from "@/lib/charts/diverging";
import { markerStyle, moveCell, type Matrix } from "@/lib/charts/prepare-heatmap";
import { fmt } from "@/lib/charts/format";

export interface Cell {
  row: number;
  col: number;
}

export interface HeatmapProps {
  values: Matrix;
  /** half-width of the colour domain */
  max: number;
  theme: Theme;
  rowLabels: string[];
  colLabel?: (c: number) => string;
  /** marker index per cell (null = none) */
  markers?: ReadonlyArray<ReadonlyArray<number | null>>;
  /** cells to outline (e.g. the hovered cell's anchor group) given the active cell */
  related?: (cell: Cell) => Cell[];
  renderTooltip?: (cell: Cell) => ReactNode;
  /** one-line description of a cell for screen readers */
  describe?: (cell: Cell) => string;
  onActivate?: (cell: Cell) => void;
  ariaLabel: string;
  testId?: string;
  /** fixed cell size; default: fit the container width */
  cellWidth?: number;
  maxCellWidth?: number;
  labelWidth?: number;
  /** write values inside cells when they are large enough */
  showValues?: boolean;
  dataAttrs?: Record<string, string>;
}

const TOP = 18;

/** Two decimals inside a cell (no "-0.00"); compact for large values. */
const cellText = (v: number) => (Math.abs(v) >= 100 ? fmt(v) : Number(v.toFixed(2)) === 0 ? "0.00" : v.toFixed(2));

export function Heatmap(props: HeatmapProps) {
  const { values, max, theme, rowLabels, markers, related, renderTooltip, describe, onActivate, ariaLabel, testId, dataAttrs } = props;
  const colLabel = props.colLabel ?? ((c: number) => String(c + 1));
  const wrap = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    const el = wrap.current;
    if (!el) return;
    setWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const rows = values.length;
  const cols = values.reduce((a, r) => Math.max(a, r.length), 0);
  const labelW = props.labelWidth ?? 96;
  const cw = props.cellWidth ?? Math.max(8, Math.min(props.maxCellWidth ?? 72, Math.floor((Math.max(width, 200) - labelW - 4) / Math.max(1, cols))));
  const ch = Math.max(12, Math.min(30, Math.round(cw * 0.62)));
  const svgW = labelW + cols * cw + 2;
  const svgH = TOP + rows * ch + 2;
  const [hover, setHover] = useState<Cell | null>(null);
  const [cursor, setCursor] = useState<Cell | null>(null);
  const [focused, setFocused] = useState(false);
  const active = hover ?? (focused ? cursor : null);
  const rowLengths = useMemo(() => values.map((r) => r.length), [values]);
  const showValues = props.showValues ?? (cw >= 40 && ch >= 18);

  // keep the cursor inside the matrix when the data changes shape
  useEffect(() => {
    if (cursor && (cursor.row >= rows || cursor.col >= (rowLengths[cursor.row] ?? 0))) setCursor(rows ? { row: 0, col: 0 } : null);
  }, [rows, rowLengths, cursor]);

  const cellAt = (e: React.MouseEvent): Cell | null => {
    const box = (e.currentTarget as SVGSVGElement).getBoundingClientRect();
    const x = e.clientX - box.left - labelW;
    const y = e.clientY - box.top - TOP;
    if (x < 0 || y < 0) return null;
    const col = Math.floor(x / cw);
    const row = Math.floor(y / ch);
    if (row >= rows || col >= (rowLengths[row] ?? 0)) return null;
    return { row, col };
  };

  const onKey = (e: React.KeyboardEvent) => {
    const at = cursor ?? { row: 0, col: 0 };
    if (e.key === "Enter" || e.key === " ") {
      if (onActivate && rows) onActivate(at);
      e.preventDefault();
      return;
    }
    const next = moveCell({ rowLengths }, at, e.key);
    if (next !== at) {
      setCursor(next);
      setHover(null);
      e.preventDefault();
    }
  };

  const outline = active && related ? related(active) : [];
  const tip = active && renderTooltip ? renderTooltip(active) : null;
  // The tooltip is fixed to the viewport beside the active cell (so no scroll box clips it),
  // flipped to the cell's left near the right edge and kept above the bottom edge.
  const svgRef = useRef<SVGSVGElement>(null);
  let tipStyle: React.CSSProperties | undefined;
  if (active && tip && svgRef.current && typeof window !== "undefined") {
    const box = svgRef.current.getBoundingClientRect();
    const cellLeft = box.left + labelW + active.col * cw;
    const cellTop = box.top + TOP + active.row * ch;
    const right = cellLeft + cw + 8 + 320 > window.innerWidth;
    tipStyle = {
      top: Math.max(8, Math.min(cellTop - 8, window.innerHeight - 380)),
      left: right ? Math.max(8, cellLeft - 8 - 320) : cellLeft + cw + 8,
    };
  }

  return (
    <div ref={wrap} className="relative w-full overflow-x-auto" data-testid={testId} {...dataAttrs}>
      {/* biome-ignore lint/a11y/useSemanticElements: a labelled composite of drawn cells, not form controls (fieldset) */}
      <div
        // biome-ignore lint/a11y/noNoninteractiveTabindex: one focusable stop for the whole grid: arrow keys move a cell cursor, announced by the live region below
        tabIndex={0}
        role="group"
        aria-label={`${ariaLabel}. Arrow keys move between cells, Enter opens the turn.`}
        onKeyDown={onKey}
        onFocus={() => {
          setFocused(true);
          if (!cursor && rows) setCursor({ row: 0, col: 0 });
        }}
        onBlur={() => setFocused(false)}
        className="inline-block rounded focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500"
      >
        {width === 0 ? (
          <div style={{ height: svgH }} />
        ) : (
          <svg
            ref={svgRef}
            aria-hidden="true"
            width={svgW}
            height={svgH}
            className="block select-none"
            onMouseMove={(e) => setHover(cellAt(e))}
            onMouseLeave={() => setHover(null)}
            onClick={(e) => {
              const c = cellAt(e);
              if (c && onActivate) onActivate(c);
            }}
            style={{ cursor: onActivate ? "pointer" : undefined }}
          >
            <defs>
              <pattern id="hm-gap" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
                <line x1="0" y1="0" x2="0" y2="6" stroke={theme === "dark" ? "#52525b" : "#d4d4d8"} strokeWidth="2" />
              </pattern>
            </defs>
            <Axis cols={cols} cw={cw} labelW={labelW} colLabel={colLabel} rowLabels={rowLabels} ch={ch} theme={theme} />
            <Cells values={values} max={max} theme={theme} cw={cw} ch={ch} labelW={labelW} markers={markers} showValues={showValues} />
            {outline.map((c) => (
              <rect
                key={`o${c.row}-${c.col}`}
                x={labelW + c.col * cw + 1}
                y={TOP + c.row * ch + 1}
                width={cw - 2}
                height={ch - 2}
                fill="none"
                stroke={theme === "dark" ? "#fde047" : "#a16207"}
                strokeWidth={2}
                pointerEvents="none"
              />
            ))}
            {active ? (
              <rect
                x={labelW + active.col * cw}
                y={TOP + active.row * ch}
                width={cw}
                height={ch}
                fill="none"
                stroke={theme === "dark" ? "#fff" : "#18181b"}
                strokeWidth={2}
                pointerEvents="none"
              />
            ) : null}
          </svg>
        )}
      </div>
      <p className="sr-only" aria-live="polite">
        {focused && cursor && describe ? describe(cursor) : ""}
      </p>
      {tip && tipStyle ? (
        <div
          role="tooltip"
          className="pointer-events-none fixed z-40 max-h-[370px] w-80 overflow-hidden rounded-md border border-zinc-200 bg-white p-2.5 text-xs shadow-lg dark:border-zinc-700 dark:bg-zinc-900"
          style={tipStyle}
          data-testid="heatmap-tooltip"
        >
          {tip}
        </div>
      ) : null}
    </div>
  );
}

const Axis = memo(function Axis({
  cols,
  cw,
  labelW,
  colLabel,
  rowLabels,
  ch,
  theme,
}: {
  cols: number;
  cw: number;
  labelW: number;
  colLabel: (c: number) => string;
  rowLabels: string[];
  ch: number;
  theme: Theme;
}) {
  const every = Math.max(1, Math.ceil(22 / cw));
  const fill = theme === "dark" ? "#a1a1aa" : "#52525b";
  return (
    <g fontSize={10} fill={fill}>
      {Array.from({ length: cols }, (_, c) =>
        c % every === 0 ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: column labels drawn at their column's position
          <text key={c} x={labelW + c * cw + cw / 2} y={12} textAnchor="middle">
            {colLabel(c)}
          </text>
        ) : null,
      )}
      {ch >= 11
        ? rowLabels.map((l, r) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: row labels drawn at their row's position
            <text key={r} x={labelW - 6} y={TOP + r * ch + ch / 2 + 3.5} textAnchor="end" fontFamily="ui-monospace, monospace">
              {l}
            </text>
          ))
        : null}
    </g>
  );
});

/**
 * The cell layer as one SVG string: 3,200 cells (plus values and markers) as React elements cost
 * ~150 ms to create and reconcile, as markup a few ms. Only numbers and our own colours go in.
 */
const Cells = memo(function Cells({
  values,
  max,
  theme,
  cw,
  ch,
  labelW,
  markers,
  showValues,
}: {
  values: Matrix;
  max: number;
  theme: Theme;
  cw: number;
  ch: number;
  labelW: number;
  markers?: ReadonlyArray<ReadonlyArray<number | null>>;
  showValues: boolean;
}) {
  const html = useMemo(() => {
    const ms = Math.max(4, Math.min(9, Math.min(cw, ch) * 0.38));
    const out: string[] = [];
    for (let r = 0; r < values.length; r++) {
      const row = values[r];
      for (let c = 0; c < row.length; c++) {
        const v = row[c];
        const x = labelW + c * cw;
        const y = TOP + r * ch;
        out.push(
          `<rect x="${x + 0.5}" y="${y + 0.5}" width="${cw - 1}" height="${ch - 1}" fill="${divergingColor(v, max, theme) ?? "url(#hm-gap)"}" data-testid="heatmap-cell" data-row="${r}" data-col="${c}" data-value="${v === null ? "" : String(v)}"></rect>`,
        );
        if (showValues && v !== null)
          out.push(
            `<text x="${x + cw / 2}" y="${y + ch / 2 + 3.5}" text-anchor="middle" font-size="10" fill="${textOn(v, max, theme)}" pointer-events="none">${cellText(v)}</text>`,
          );
        const m = markers?.[r]?.[c];
        if (m !== null && m !== undefined) out.push(markerSvg(x + cw - ms - 1.5, y + 1.5, ms, m));
      }
    }
    return out.join("");
  }, [values, max, theme, cw, ch, labelW, markers, showValues]);
  // biome-ignore lint/security/noDangerouslySetInnerHtml: built above from numbers and colours only (no text from the data)
  return <g dangerouslySetInnerHTML={{ __html: html }} />;
});

function markerSvg(x: number, y: number, s: number, marker: number): string {
  const { shape, color } = markerStyle(marker);
  const common = `fill="${color}" stroke="#fff" stroke-width="0.8" pointer-events="none"`;
  const f = (n: number) => n.toFixed(2);
  if (shape === "circle") return `<circle cx="${f(x + s / 2)}" cy="${f(y + s / 2)}" r="${f(s / 2)}" ${common}></circle>`;
  if (shape === "square") return `<rect x="${f(x)}" y="${f(y)}" width="${f(s)}" height="${f(s)}" ${common}></rect>`;
  if (shape === "triangle") return `<path d="M${f(x + s / 2)},${f(y)} L${f(x + s)},${f(y + s)} L${f(x)},${f(y + s)} Z" ${common}></path>`;
  return `<path d="M${f(x + s / 2)},${f(y)} L${f(x + s)},${f(y + s / 2)} L${f(x + s / 2)},${f(y + s)} L${f(x)},${f(y + s / 2)} Z" ${common}></path>`;
}

export function Marker({ x, y, size, marker }: { x: number; y: number; size: number; marker: number }) {
  const { shape, color } = markerStyle(marker);
  const s = size;
  const common = { fill: color, stroke: "#fff", strokeWidth: 0.8, pointerEvents: "none" as const };
  if (shape === "circle") return <circle cx={x + s / 2} cy={y + s / 2} r={s / 2} {...common} />;
  if (shape === "square") return <rect x={x} y={y} width={s} height={s} {...common} />;
  if (shape === "triangle") return <path d={`M${x + s / 2},${y} L${x + s},${y + s} L${x},${y + s} Z`} {...common} />;
  return <path d={`M${x + s / 2},${y} L${x + s},${y + s / 2} L${x + s / 2},${y + s} L${x},${y + s / 2} Z`} {...common} />;
}

/** A marker glyph as a small inline SVG (legends, tooltips, tables). */
export function MarkerIcon({ marker, size = 10 }: { marker: number; size?: number }) {
  return (
    <svg width={size + 2} height={size + 2} className="inline-block align-[-1px]" aria-hidden>
      <Marker x={1} y={1} size={size} marker={marker} />
    </svg>
  );
}
