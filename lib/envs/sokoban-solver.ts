// Breadth-first search over Sokoban states (player, boxes): the move-optimal plan of a level.
// The generator uses it to reject short levels (config minSolutionMoves); the tests replay its
// plans to check every generated level is solvable.
import type { SokobanLevel } from "./sokoban";

export interface SokobanSearch {
  /** The moves of an optimal plan; null when the search stopped at maxStates or the level is unsolvable. */
  plan: string[] | null;
  /** Fewest moves that can solve the level: exact when plan is set, else every plan is at least this long. */
  minMoves: number;
  /** States visited. */
  states: number;
}

/**
 * BFS from the level's start; stops (plan null) once more than maxStates states are seen, or
 * once every plan shorter than maxDepth moves is ruled out (minMoves = maxDepth then): the
 * generator only asks whether a level takes at least that many moves.
 */
export function searchSokoban(level: SokobanLevel, maxStates = 2_000_000, maxDepth = Infinity): SokobanSearch {
  const { width, walls } = level;
  const targets = new Set(level.targets);
  const moves: [string, number][] = [
    ["up", -width],
    ["down", width],
    ["left", -1],
    ["right", 1],
  ];
  const key = (player: number, boxes: number[]) => `${player}|${boxes.join(",")}`;
  const start = { player: level.player, boxes: level.boxes.slice().sort((a, b) => a - b), depth: 0 };
  const parent = new Map<string, { prev: string | null; move: string | null }>([[key(start.player, start.boxes), { prev: null, move: null }]]);
  const queue = [start];
  for (let qi = 0; qi < queue.length; qi++) {
    const cur = queue[qi];
    const curKey = key(cur.player, cur.boxes);
    if (cur.depth >= maxDepth && !cur.boxes.every((b) => targets.has(b))) return { plan: null, minMoves: maxDepth, states: parent.size };
    if (cur.boxes.every((b) => targets.has(b))) {
      const plan: string[] = [];
      for (let k: string | null = curKey; k !== null; ) {
        const p: { prev: string | null; move: string | null } = parent.get(k)!;
        if (p.move) plan.push(p.move);
        k = p.prev;
      }
      return { plan: plan.reverse(), minMoves: cur.depth, states: parent.size };
    }
    // BFS order: every state at a smaller depth was expanded without reaching the goal.
    if (parent.size > maxStates) return { plan: null, minMoves: cur.depth, states: parent.size };
    for (const [name, d] of moves) {
      const to = cur.player + d;
      if (walls[to]) continue;
      let boxes = cur.boxes;
      const bi = boxes.indexOf(to);
      if (bi >= 0) {
        const beyond = to + d;
        if (walls[beyond] || boxes.includes(beyond)) continue;
        boxes = boxes.slice();
        boxes[bi] = beyond;
        boxes.sort((a, b) => a - b);
      }
      const k = key(to, boxes);
      if (parent.has(k)) continue;
      parent.set(k, { prev: curKey, move: name });
      queue.push({ player: to, boxes, depth: cur.depth + 1 });
    }
  }
  return { plan: null, minMoves: Infinity, states: parent.size };
}

/** A move-optimal plan, null if unsolvable (or beyond maxStates). */
export function solveSokobanBfs(level: SokobanLevel, maxStates = 2_000_000): string[] | null {
  return searchSokoban(level, maxStates).plan;
}
