// Prepares a credit heatmap: rows x columns of advantages (G trajectories x turns, or training
// steps x turn index), GiGPO anchor groups and their statistics, and the difference of two
// estimators. Pure; the anchor-group ids themselves come from lib/credit (gigpo.ts) via the API.
import { colorAt } from "./palette";

export type Matrix = (number | null)[][];

/** a - b cell by cell; a gap where either side has none. */
export function diffMatrix(a: Matrix, b: Matrix): Matrix {
  return a.map((row, i) =>
    row.map((v, j) => {
      const w = b[i]?.[j];
      return v === null || w === null || w === undefined ? null : v - w;
    }),
  );
}

export function* cells(m: Matrix): Generator<number | null> {
  for (const r of m) yield* r;
}

export interface Stats {
  mean: number;
  /** sample std (n - 1); 0 for one value */
  std: number;
  min: number;
  max: number;
  n: number;
}

export function stats(xs: readonly number[]): Stats | null {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length === 0) return null;
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  let std = v.length > 1 ? Math.sqrt(v.reduce((a, x) => a + (x - mean) * (x - mean), 0) / (v.length - 1)) : 0;
  // equal values whose mean rounds differently leave ~1e-16 of "spread": that is 0
  if (std < 1e-12 * Math.max(1, Math.abs(mean))) std = 0;
  return { mean, std, min: Math.min(...v), max: Math.max(...v), n: v.length };
}

export interface AnchorGroup {
  id: number;
  members: { row: number; col: number }[];
  /** statistics of the shown advantage over the members */
  advantage: Stats | null;
  /** statistics of extra per-turn values over the members (e.g. GiGPO's step return G_t, A_S, reward) */
  extra: Record<string, Stats | null>;
  /** index into the marker set for groups with 2+ members; null for a singleton */
  marker: number | null;
}

/**
 * Groups the cells by anchor id. `extra` holds per-turn matrices (same shape) whose member
 * statistics are reported too. Groups of 2+ members get markers in order of first appearance.
 */
export function anchorGroups(ids: ReadonlyArray<ReadonlyArray<number | null>>, values: Matrix, extra: Record<string, Matrix> = {}): AnchorGroup[] {
  const members = new Map<number, { row: number; col: number }[]>();
  ids.forEach((row, r) => {
    row.forEach((id, c) => {
      if (id === null) return;
      let m = members.get(id);
      if (!m) {
        m = [];
        members.set(id, m);
      }
      m.push({ row: r, col: c });
    });
  });
  let nextMarker = 0;
  return [...members.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([id, ms]) => {
      const pick = (m: Matrix) => ms.map(({ row, col }) => m[row]?.[col]).filter((v): v is number => v !== null && v !== undefined);
      return {
        id,
        members: ms,
        advantage: stats(pick(values)),
        extra: Object.fromEntries(Object.entries(extra).map(([k, m]) => [k, stats(pick(m))])),
        marker: ms.length > 1 ? nextMarker++ : null,
      };
    });
}

export type MarkerShape = "circle" | "square" | "triangle" | "diamond";
const SHAPES: MarkerShape[] = ["circle", "square", "triangle", "diamond"];

/** The marker of a multi-member anchor group: 10 colours x 4 shapes before they repeat. */
export function markerStyle(marker: number): { shape: MarkerShape; color: string } {
  return { shape: SHAPES[Math.floor(marker / 10) % SHAPES.length], color: colorAt(marker) };
}

/** Share of anchor groups with one member, and the size histogram (GiGPO diagnostics, per task group). */
export function anchorSummary(groups: readonly AnchorGroup[]): { count: number; singletonRatio: number; sizes: Record<number, number> } {
  const sizes: Record<number, number> = {};
  let singles = 0;
  for (const g of groups) {
    sizes[g.members.length] = (sizes[g.members.length] ?? 0) + 1;
    if (g.members.length === 1) singles++;
  }
  return { count: groups.length, singletonRatio: groups.length ? singles / groups.length : 0, sizes };
}

/** Next cell for keyboard navigation in a ragged matrix (rows of different lengths). */
export function moveCell(m: { rowLengths: readonly number[] }, at: { row: number; col: number }, key: string): { row: number; col: number } {
  const rows = m.rowLengths.length;
  if (rows === 0) return at;
  let { row, col } = at;
  switch (key) {
    case "ArrowRight":
      col++;
      break;
    case "ArrowLeft":
      col--;
      break;
    case "ArrowDown":
      row++;
      break;
    case "ArrowUp":
      row--;
      break;
    case "Home":
      col = 0;
      break;
    case "End":
      col = m.rowLengths[Math.max(0, Math.min(rows - 1, row))] - 1;
      break;
    case "PageUp":
      row = 0;
      break;
    case "PageDown":
      row = rows - 1;
      break;
    default:
      return at;
  }
  row = Math.max(0, Math.min(rows - 1, row));
  col = Math.max(0, Math.min(Math.max(0, m.rowLengths[row] - 1), col));
  return { row, col };
}

/** The group a heatmap opens on: the first with mixed outcomes (an all-success or all-fail group has no outcome signal), else the first. */
export function defaultGroup<G extends { successRate: number }>(groups: readonly G[] | undefined): G | undefined {
  return groups?.find((g) => g.successRate > 0 && g.successRate < 1) ?? groups?.[0];
}
