"use client";
// A text box that stays fast for huge texts: short texts render as-is (wrapped); long ones
// (many lines or characters) render only the visible lines, one fixed-height line each.
import { useRef } from "react";
import { useVirtualizer } from "@tanstack/react-virtual";

const LINE = 16;
const LONG_CHARS = 20_000;
const LONG_LINES = 400;

export function LongText({ text, className = "", maxHeight = 288, label }: { text: string; className?: string; maxHeight?: number; label?: string }) {
  const long = text.length > LONG_CHARS || countLines(text, LONG_LINES + 1) > LONG_LINES;
  if (!long)
    return (
      // biome-ignore lint/a11y/useSemanticElements: a region, so that its label is read; the box keeps its own element for its formatting
      <pre
        className={`overflow-auto whitespace-pre-wrap break-words rounded p-2 font-mono text-xs ${className}`}
        style={{ maxHeight }}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable box takes focus so that it can be scrolled from the keyboard
        tabIndex={0}
        role="region"
        aria-label={label}
      >
        {text}
      </pre>
    );
  return <VirtualLines text={text} className={className} maxHeight={maxHeight} label={label} />;
}

function countLines(s: string, stopAt: number): number {
  let n = 1;
  for (let i = s.indexOf("\n"); i !== -1 && n < stopAt; i = s.indexOf("\n", i + 1)) n++;
  return n;
}

function VirtualLines({ text, className, maxHeight, label }: { text: string; className: string; maxHeight: number; label?: string }) {
  const lines = text.split("\n");
  const box = useRef<HTMLDivElement>(null);
  const v = useVirtualizer({ count: lines.length, getScrollElement: () => box.current, estimateSize: () => LINE, overscan: 20 });
  return (
    <div>
      {/* biome-ignore lint/a11y/useSemanticElements: a region, so that its label is read; the box keeps its own element for its formatting */}
      <div
        ref={box}
        className={`overflow-auto rounded p-2 font-mono text-xs ${className}`}
        style={{ height: Math.min(maxHeight, lines.length * LINE + 16) }}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable box takes focus so that it can be scrolled from the keyboard
        tabIndex={0}
        role="region"
        aria-label={label}
        data-testid="long-text"
      >
        <div style={{ height: v.getTotalSize(), position: "relative", minWidth: "max-content" }}>
          {v.getVirtualItems().map((it) => (
            <div key={it.key} className="absolute left-0 whitespace-pre" style={{ top: it.start, height: LINE, lineHeight: `${LINE}px` }}>
              {lines[it.index] || " "}
            </div>
          ))}
        </div>
      </div>
      <p className="mt-0.5 text-[11px] text-zinc-500">
        {lines.length.toLocaleString()} lines, {text.length.toLocaleString()} characters (only the visible lines are drawn)
      </p>
    </div>
  );
}
