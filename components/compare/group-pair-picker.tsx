"use client";
// With more than two groups (a sweep's grid points), which two the difference panel compares.
import type { RunGroup } from "@/lib/charts/prepare-compare";
import { inputCls } from "@/components/ui/controls";

export function GroupPairPicker({
  groups,
  eligible,
  pair,
  setPair,
}: {
  groups: RunGroup[];
  /** indexes of the groups with 2+ runs */
  eligible: number[];
  pair: [number, number];
  setPair: (p: [number, number]) => void;
}) {
  return (["A", "B"] as const).map((side, k) => (
    <label key={side} className="flex items-center gap-2">
      <span className="text-zinc-500">{side}</span>
      <select
        className={inputCls}
        value={pair[k]}
        onChange={(e) => {
          // picking the other side's group swaps the two
          const next: [number, number] = [...pair];
          next[k] = Number(e.target.value);
          if (next[0] === next[1]) next[1 - k] = pair[k];
          setPair(next);
        }}
        aria-label={`Group ${side}`}
      >
        {eligible.map((i) => (
          <option key={i} value={i}>
            {groups[i].label}
          </option>
        ))}
      </select>
    </label>
  ));
}
