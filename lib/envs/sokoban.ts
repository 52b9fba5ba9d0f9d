// Sokoban as in RAGEN (Wang et al. 2025, built on gym-sokoban, Schrader 2018): push every
// box onto a target. Puzzles come from reverse play, so every instance is solvable: boxes
// start on their targets and a reverse player PULLS them away; replaying the pulls forward
// as pushes solves the level.
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { matchAction } from "./parse-action";
import { createRng, mixSeed, type Rng } from "./rng";
import { searchSokoban } from "./sokoban-solver";
import type { EnvSpec, EnvView } from "./types";

export const sokobanConfigSchema = z
  .strictObject({
    width: z.number().int().min(5).max(12).default(6).describe("Room width including the outer wall."),
    height: z.number().int().min(5).max(12).default(6).describe("Room height including the outer wall."),
    numBoxes: z.number().int().min(1).max(4).default(1).describe("Boxes (and targets) in the room."),
    reverseSteps: z
      .number()
      .int()
      .min(5)
      .max(500)
      .default(100)
      .describe("Length of each reverse-play walk that scatters the boxes; longer walks give harder puzzles."),
    minSolutionMoves: z
      .number()
      .int()
      .min(0)
      .max(60)
      .default(4)
      .describe("Keep only levels whose optimal solution (BFS) takes at least this many moves (0: any)."),
    maxTurns: z.number().int().min(1).max(500).default(30).describe("Turns before the episode is truncated (one move per turn)."),
  })
  .superRefine((c, ctx) => {
    const interior = (c.width - 2) * (c.height - 2);
    if (c.numBoxes > Math.floor(interior / 4))
      ctx.addIssue({ code: "custom", path: ["numBoxes"], message: `at most ${Math.floor(interior / 4)} boxes fit a ${c.width}x${c.height} room` });
  });
export type SokobanConfig = z.infer<typeof sokobanConfigSchema>;

// RAGEN's reward shaping (ragen/env/sokoban): a step costs 0.1, a box pushed onto a target
// earns 1 (and pushing it off loses 1), solving earns 10 more.
export const SOKOBAN_REWARD = { step: -0.1, boxOnTarget: 1, boxOffTarget: -1, solved: 10 } as const;

export const SOKOBAN_ACTIONS = ["up", "down", "left", "right"] as const;
export type SokobanAction = (typeof SOKOBAN_ACTIONS)[number];
const DELTA: Record<SokobanAction, [number, number]> = { up: [-1, 0], down: [1, 0], left: [0, -1], right: [0, 1] };
const ALIASES: Record<string, string> = {
  north: "up",
  south: "down",
  west: "left",
  east: "right",
  u: "up",
  d: "down",
  l: "left",
  r: "right",
  "move up": "up",
  "move down": "down",
  "move left": "left",
  "move right": "right",
  "push up": "up",
  "push down": "down",
  "push left": "left",
  "push right": "right",
};

/** A level: static walls and targets; dynamic player and boxes (cells as row*width+col). */
export interface SokobanLevel {
  width: number;
  height: number;
  walls: boolean[];
  targets: number[];
  boxes: number[];
  player: number;
}

// Observation legend: ASCII, one character per cell, rows separated by newlines.
export const SOKOBAN_LEGEND: Record<string, string> = {
  "#": "wall",
  _: "floor",
  O: "target",
  X: "box",
  "*": "box on target",
  P: "player",
  S: "player on target",
};

export class SokobanEnv extends BaseEnv {
  readonly id = "sokoban";
  private level!: SokobanLevel;
  private boxes = new Set<number>();
  private player = 0;
  private targets = new Set<number>();

  constructor(readonly config: SokobanConfig) {
    super(config.maxTurns);
  }

  /** The current state (tests and solvers read it; do not mutate). */
  get state(): SokobanLevel {
    return { ...this.level, boxes: [...this.boxes].sort((a, b) => a - b), player: this.player };
  }

  protected onReset(seed: number): string {
    this.level = generateSokoban(this.config, seed);
    this.boxes = new Set(this.level.boxes);
    this.targets = new Set(this.level.targets);
    this.player = this.level.player;
    return this.render();
  }

  protected onStep(actionText: string): TurnOutcome {
    const action = matchAction(actionText, SOKOBAN_ACTIONS, ALIASES) as SokobanAction | null;
    if (action === null) return { observation: this.render(), reward: 0, done: false, info: invalidInfo() };
    const { width, walls } = this.level;
    const [dr, dc] = DELTA[action];
    const d = dr * width + dc;
    const next = this.player + d;
    let reward: number = SOKOBAN_REWARD.step;
    let pushed = false;
    if (!walls[next]) {
      if (this.boxes.has(next)) {
        const beyond = next + d;
        if (!walls[beyond] && !this.boxes.has(beyond)) {
          this.boxes.delete(next);
          this.boxes.add(beyond);
          if (this.targets.has(beyond)) reward += SOKOBAN_REWARD.boxOnTarget;
          if (this.targets.has(next)) reward += SOKOBAN_REWARD.boxOffTarget;
          this.player = next;
          pushed = true;
        }
      } else {
        this.player = next;
      }
    }
    const onTarget = this.boxesOnTarget();
    const success = onTarget === this.boxes.size;
    if (success) reward += SOKOBAN_REWARD.solved;
    return {
      observation: this.render(),
      reward: round(reward),
      done: success,
      info: { valid: true, success, action, pushed, boxesOnTarget: onTarget },
    };
  }

  admissibleActions(): string[] {
    return [...SOKOBAN_ACTIONS];
  }

  instructions(): string {
    return [
      "You are solving a Sokoban puzzle. Push every box onto a target.",
      "You can push a box but not pull it, and you cannot push two boxes or push into a wall.",
      "Symbols: # wall, _ floor, O target, X box, * box on target, P you, S you on a target.",
      "Each turn, answer with one move: up, down, left or right, e.g. <action>left</action>.",
      "Rewards: -0.1 per move, +1 for a box pushed onto a target (-1 off it), +10 when solved.",
    ].join("\n");
  }

  view(): EnvView {
    return {
      kind: "grid",
      cells: this.rows().map((r) => r.split("")),
      legend: SOKOBAN_LEGEND,
      caption: `${this.boxesOnTarget()}/${this.boxes.size} boxes on target`,
    };
  }

  /** The start grid: walls, targets, boxes and player (the whole level). */
  protected instanceState(): AnchorValue {
    return renderSokoban(this.level).join("\n");
  }

  protected anchorState(): AnchorValue {
    return this.render();
  }

  private boxesOnTarget(): number {
    let n = 0;
    for (const b of this.boxes) if (this.targets.has(b)) n++;
    return n;
  }

  private rows(): string[] {
    return renderSokoban({ ...this.level, boxes: [...this.boxes], player: this.player });
  }

  private render(): string {
    return this.rows().join("\n");
  }
}

export function renderSokoban(level: SokobanLevel): string[] {
  const { width, height, walls } = level;
  const targets = new Set(level.targets);
  const boxes = new Set(level.boxes);
  const rows: string[] = [];
  for (let r = 0; r < height; r++) {
    let row = "";
    for (let c = 0; c < width; c++) {
      const i = r * width + c;
      if (walls[i]) row += "#";
      else if (i === level.player) row += targets.has(i) ? "S" : "P";
      else if (boxes.has(i)) row += targets.has(i) ? "*" : "X";
      else row += targets.has(i) ? "O" : "_";
    }
    rows.push(row);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------
// Generation (gym-sokoban's room_utils: random-walk topology, then reverse play).

type GenConfig = Pick<SokobanConfig, "width" | "height" | "numBoxes" | "reverseSteps"> & { minSolutionMoves?: number };

/** BFS budget per candidate level: beyond it the level counts as long enough (its optimum is at least the depth reached). */
const SOLVER_STATES = 200_000;

/**
 * Generates a solvable level; retries with derived seeds when a room is too cramped or its
 * optimal solution is shorter than minSolutionMoves (one-move levels teach nothing).
 */
export function generateSokoban(config: GenConfig, seed: number): SokobanLevel {
  const minMoves = config.minSolutionMoves ?? 0;
  for (let attempt = 0; attempt < 2000; attempt++) {
    const rng = createRng(mixSeed("sokoban", seed, attempt));
    const level = tryGenerate(config, rng);
    if (level && (minMoves === 0 || searchSokoban(level, SOLVER_STATES, minMoves).minMoves >= minMoves)) return level;
  }
  throw new Error(
    `sokoban: could not generate a ${config.width}x${config.height} level with ${config.numBoxes} boxes${minMoves ? ` and an optimal solution of at least ${minMoves} moves (lower minSolutionMoves or raise reverseSteps)` : ""}`,
  );
}

// gym-sokoban's carving masks: each walk step opens one of these 3x3 patterns.
const MASKS: number[][][] = [
  [
    [0, 0, 0],
    [1, 1, 1],
    [0, 0, 0],
  ],
  [
    [0, 1, 0],
    [0, 1, 0],
    [0, 1, 0],
  ],
  [
    [0, 0, 0],
    [1, 1, 0],
    [0, 1, 0],
  ],
  [
    [0, 0, 0],
    [1, 1, 0],
    [1, 1, 0],
  ],
  [
    [0, 0, 0],
    [0, 1, 1],
    [0, 1, 0],
  ],
];

function tryGenerate(config: GenConfig, rng: Rng): SokobanLevel | null {
  const { width, height, numBoxes } = config;
  const walls = carveRoom(width, height, rng);
  const floor: number[] = [];
  for (let i = 0; i < walls.length; i++) if (!walls[i]) floor.push(i);
  if (floor.length < numBoxes + 3) return null;

  const cells = rng.shuffle(floor);
  const targets = cells.slice(0, numBoxes);
  const start = { boxes: targets.slice(), player: cells[numBoxes] };

  // Several reverse walks; keep the state whose boxes moved farthest (gym-sokoban scores
  // box displacement times box swaps; we use displacement plus a bonus per pulled box).
  let best: { boxes: number[]; player: number; score: number } | null = null;
  for (let walk = 0; walk < 4; walk++) {
    const s = reverseWalk(width, walls, targets, start, config.reverseSteps, rng);
    if (s.score > 0 && (best === null || s.score > best.score)) best = s;
  }
  if (best === null) return null;
  const targetSet = new Set(targets);
  if (best.boxes.every((b) => targetSet.has(b))) return null;
  return { width, height, walls, targets: targets.slice().sort((a, b) => a - b), boxes: best.boxes.slice().sort((a, b) => a - b), player: best.player };
}

function carveRoom(width: number, height: number, rng: Rng): boolean[] {
  const walls = new Array<boolean>(width * height).fill(true);
  const interior = (r: number, c: number) => r >= 1 && r < height - 1 && c >= 1 && c < width - 1;
  let r = rng.range(1, height - 2);
  let c = rng.range(1, width - 2);
  const dirs: [number, number][] = [
    [-1, 0],
    [1, 0],
    [0, -1],
    [0, 1],
  ];
  let dir = rng.pick(dirs);
  const steps = Math.round(1.5 * (width - 2) * (height - 2));
  for (let s = 0; s < steps; s++) {
    if (rng.chance(0.35)) dir = rng.pick(dirs);
    const nr = r + dir[0];
    const nc = c + dir[1];
    if (interior(nr, nc)) {
      r = nr;
      c = nc;
    }
    const mask = rng.pick(MASKS);
    for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (mask[i][j] && interior(r + i - 1, c + j - 1)) walls[(r + i - 1) * width + (c + j - 1)] = false;
  }
  return walls;
}

/**
 * One reverse-play walk: the player moves at random and, when a box is directly behind it,
 * pulls it along with probability 0.8. Every reverse move is the exact inverse of a legal
 * forward move, so the forward game can undo the walk.
 */
function reverseWalk(
  width: number,
  walls: boolean[],
  targets: number[],
  start: { boxes: number[]; player: number },
  steps: number,
  rng: Rng,
): { boxes: number[]; player: number; score: number } {
  const boxes = start.boxes.slice(); // boxes[i] started on targets[i]
  let player = start.player;
  const deltas = [-width, width, -1, 1];
  let best = { boxes: boxes.slice(), player, score: 0 };
  let pulls = 0;
  for (let s = 0; s < steps; s++) {
    const d = rng.pick(deltas);
    const to = player + d;
    if (walls[to] || boxes.includes(to)) continue;
    const behind = boxes.indexOf(player - d);
    if (behind >= 0 && rng.chance(0.8)) {
      boxes[behind] = player;
      pulls++;
    }
    player = to;
    const displacement = boxes.reduce((sum, b, i) => sum + manhattan(b, targets[i], width), 0);
    const score = displacement > 0 ? displacement * 10 + Math.min(pulls, 9) : 0;
    if (score > best.score) best = { boxes: boxes.slice(), player, score };
  }
  return best;
}

function manhattan(a: number, b: number, width: number): number {
  return Math.abs(Math.floor(a / width) - Math.floor(b / width)) + Math.abs((a % width) - (b % width));
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

export const sokobanSpec: EnvSpec<SokobanConfig> = {
  id: "sokoban",
  title: "Sokoban",
  description:
    "Push every box onto a target (RAGEN / gym-sokoban). Levels come from reverse play, so each is solvable; shaped reward: -0.1 per move, +1 per box on target, +10 when solved.",
  configSchema: sokobanConfigSchema,
  create: (config) => new SokobanEnv(config),
};
