// Turn-level diagnostics as a training step x turn index grid (every turn index its own column,
// where the line charts draw the first few turns and pool the rest): the share of the step's
// |advantage| at each turn, its mean advantage, the share of trajectories that reach it, and the
// policy's mean token entropy there. Pure; the credit page draws it as a heatmap.
import type { TurnTable } from "@/lib/charts/turn-diagnostics";

export type TurnMetric = "creditShare" | "meanAdvantage" | "reach" | "entropy";

export const TURN_METRICS: { id: TurnMetric; label: string; help: string; signed: boolean }[] = [
  { id: "creditShare", label: "credit share", help: "share of the step's |advantage| at this turn index: which turn gets the credit", signed: false },
  { id: "meanAdvantage", label: "mean advantage", help: "mean advantage of the turns at this index", signed: true },
  { id: "reach", label: "trajectories reaching the turn", help: "share of the step's trajectories still running at this turn", signed: false },
  {
    id: "entropy",
    label: "token entropy",
    help: "mean entropy of the policy over the turn's tokens (nats): a turn whose entropy falls to 0 has collapsed (GTR)",
    signed: false,
  },
];

/** step x turn index values of one metric; null where no turn of that step reached that index (or stored no entropy). */
export function turnGrid(d: TurnTable, metric: TurnMetric): (number | null)[][] {
  return d.steps.map((_, s) => {
    const count = d.count[s] ?? [];
    const row: (number | null)[] = [];
    let mass = 0;
    for (let t = 0; t < d.turns; t++) mass += (d.meanAbs[s]?.[t] ?? 0) * (count[t] ?? 0);
    const first = count[0] ?? 0;
    for (let t = 0; t < d.turns; t++) {
      const c = count[t] ?? 0;
      if (metric === "reach") row.push(first > 0 ? c / first : null);
      else if (metric === "entropy") row.push(d.entropy?.[s]?.[t] ?? null);
      else if (c === 0) row.push(null);
      else if (metric === "creditShare") row.push(mass > 0 ? ((d.meanAbs[s]?.[t] ?? 0) * c) / mass : null);
      else row.push(d.mean[s]?.[t] ?? null);
    }
    return row;
  });
}
