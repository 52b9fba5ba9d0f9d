// Turn-level diagnostics over training, from the credit overview's step x turn-index table: which
// turn of the episode gets the credit as training proceeds (share of the step's |advantage| mass at
// each turn index), its mean advantage, and how many trajectories still run at that turn (episodes
// shorten as a policy learns), and the policy's mean token entropy at that turn where the run stored
// it (thought collapse, GTR: entropy falling toward 0 at some turns). Pure: the credit page only draws it.

/** The part of the credit overview (GET /runs/{id}/credit) these diagnostics read. */
export interface TurnTable {
  /** the shown steps, ascending */
  steps: number[];
  /** turn-index columns */
  turns: number;
  /** step x turn index: mean and mean absolute advantage, count of turns at that index */
  mean: (number | null)[][];
  meanAbs: (number | null)[][];
  count: number[][];
  /** step x turn index: mean token entropy (absent or null: the run stored none) */
  entropy?: (number | null)[][] | null;
}

/** Turn indices drawn as their own line; later turns are summed into one "≥ N+1" line. */
export const TURN_LINES = 5;

export interface TurnSeries {
  /** "turn 1" … "turn 5", "turns ≥ 6" */
  label: string;
  /** per shown step; null where no trajectory reached this turn */
  creditShare: (number | null)[];
  meanAdvantage: (number | null)[];
  reach: (number | null)[];
  /** mean token entropy (weighted by turn count for the "≥" line); null where none stored */
  entropy: (number | null)[];
}

export function turnDiagnostics(d: TurnTable, lines = TURN_LINES): TurnSeries[] {
  const nLines = Math.min(lines + (d.turns > lines ? 1 : 0), d.turns);
  const cols = (i: number) => (i < lines ? [i] : Array.from({ length: d.turns - lines }, (_, j) => lines + j));
  return Array.from({ length: nLines }, (_, i) => {
    const idx = cols(i);
    const label = i < lines ? `turn ${i + 1}` : `turns ≥ ${lines + 1}`;
    const creditShare: (number | null)[] = [];
    const meanAdvantage: (number | null)[] = [];
    const reach: (number | null)[] = [];
    const entropy: (number | null)[] = [];
    d.steps.forEach((_, s) => {
      const count = d.count[s] ?? [];
      const absMass = (t: number) => (d.meanAbs[s]?.[t] ?? 0) * (count[t] ?? 0);
      let total = 0;
      for (let t = 0; t < d.turns; t++) total += absMass(t);
      let mass = 0;
      let n = 0;
      let sum = 0;
      let hN = 0;
      let hSum = 0;
      for (const t of idx) {
        const h = d.entropy?.[s]?.[t];
        if (h !== null && h !== undefined && (count[t] ?? 0) > 0) {
          hN += count[t];
          hSum += h * count[t];
        }
        mass += absMass(t);
        const c = count[t] ?? 0;
        const m = d.mean[s]?.[t];
        if (c > 0 && m !== null && m !== undefined) {
          n += c;
          sum += m * c;
        }
      }
      const first = count[0] ?? 0;
      const reached = i < lines ? (count[i] ?? 0) : (count[lines] ?? 0);
      creditShare.push(total > 0 && n > 0 ? mass / total : null);
      meanAdvantage.push(n > 0 ? sum / n : null);
      reach.push(first > 0 && reached > 0 ? reached / first : first > 0 ? 0 : null);
      entropy.push(hN > 0 ? hSum / hN : null);
    });
    return { label, creditShare, meanAdvantage, reach, entropy };
  });
}
