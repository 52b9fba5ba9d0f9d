// Tic-tac-toe for self-play (SPIRAL, MARS): both players act through step(), player 0 plays
// X and moves first. No opponent is built in. The acting player's reward is returned as
// `reward`, both players' rewards as `rewards` (zero-sum: +1 / -1 on a win, 0 on a draw).
// Self-play convention: info.success marks a decided game (not a draw); info.winner names the winner.
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { extractAction, normalizeAction } from "./parse-action";
import { createRng, mixSeed } from "./rng";
import type { EnvSpec, EnvView } from "./types";

export const ticTacToeConfigSchema = z.strictObject({
  randomOpeningMoves: z
    .number()
    .int()
    .min(0)
    .max(4)
    .default(0)
    .describe("Random moves played at reset (from the seed) so different seeds start from different positions."),
  maxTurns: z.number().int().min(1).max(100).default(20).describe("Turns (both players, invalid moves included) before truncation."),
});
export type TicTacToeConfig = z.infer<typeof ticTacToeConfigSchema>;

const COLS = ["a", "b", "c"];
/** Canonical cell names: column letter then row number, "a1" top-left to "c3" bottom-right. */
export const TICTACTOE_CELLS = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => `${COLS[i % 3]}${Math.floor(i / 3) + 1}`);
const LINES = [
  [0, 1, 2],
  [3, 4, 5],
  [6, 7, 8],
  [0, 3, 6],
  [1, 4, 7],
  [2, 5, 8],
  [0, 4, 8],
  [2, 4, 6],
];
const MARK = ["X", "O"];

export interface TicTacToeState {
  /** 9 cells, row-major: "X", "O" or "." */
  board: string[];
  toMove: number;
  winner: number | null;
}

export class TicTacToeEnv extends BaseEnv {
  readonly id = "tictactoe";
  override readonly numAgents = 2;
  private board: string[] = [];
  private toMove = 0;
  private winner: number | null = null;

  constructor(readonly config: TicTacToeConfig) {
    super(config.maxTurns);
  }

  get state(): TicTacToeState {
    return { board: this.board.slice(), toMove: this.toMove, winner: this.winner };
  }

  protected onReset(seed: number): string {
    this.board = new Array<string>(9).fill(".");
    this.toMove = 0;
    this.winner = null;
    const rng = createRng(mixSeed("tictactoe", seed));
    for (let k = 0; k < this.config.randomOpeningMoves; k++) {
      // At most 4 opening moves: nobody has three marks yet, so the game is never decided at reset.
      const cell = rng.pick(this.emptyCells());
      this.board[cell] = MARK[this.toMove];
      this.toMove = 1 - this.toMove;
    }
    return this.render("");
  }

  protected onStep(actionText: string): TurnOutcome {
    const actor = this.toMove;
    const cell = parseCell(actionText);
    if (cell === null || this.board[cell] !== ".") {
      const why = cell === null ? "Invalid move: name an empty cell such as b2." : `Invalid move: ${TICTACTOE_CELLS[cell]} is taken.`;
      return {
        observation: this.render(why),
        reward: 0,
        done: false,
        info: { ...invalidInfo(cell === null ? null : TICTACTOE_CELLS[cell]), agent: actor },
        rewards: [0, 0],
      };
    }
    this.board[cell] = MARK[actor];
    const won = LINES.some((l) => l.every((i) => this.board[i] === MARK[actor]));
    const draw = !won && this.emptyCells().length === 0;
    if (won) this.winner = actor;
    const rewards = [0, 0];
    if (won) {
      rewards[actor] = 1;
      rewards[1 - actor] = -1;
    }
    this.toMove = 1 - actor;
    const note = `Player ${actor} (${MARK[actor]}) played ${TICTACTOE_CELLS[cell]}.`;
    const end = won ? ` Player ${actor} (${MARK[actor]}) wins.` : draw ? " The game is a draw." : "";
    return {
      observation: won || draw ? `${note}${end}\n${this.boardText()}` : this.render(note),
      reward: rewards[actor],
      rewards,
      done: won || draw,
      info: { valid: true, success: won, action: TICTACTOE_CELLS[cell], agent: actor, winner: won ? actor : null, draw },
    };
  }

  currentAgent(): number {
    return this.toMove;
  }

  admissibleActions(): string[] {
    return this.emptyCells().map((i) => TICTACTOE_CELLS[i]);
  }

  instructions(): string {
    return [
      "You are playing tic-tac-toe against another player. Player 0 is X and moves first; player 1 is O.",
      "Get three of your marks in a row, column or diagonal to win.",
      "Cells are named by column a-c (left to right) and row 1-3 (top to bottom): a1 is top-left, c3 bottom-right.",
      "Each turn, answer with one empty cell, e.g. <action>b2</action>.",
      "Reward: +1 for a win, -1 for a loss, 0 for a draw.",
    ].join("\n");
  }

  view(): EnvView {
    return {
      kind: "grid",
      cells: [0, 1, 2].map((r) => this.board.slice(r * 3, r * 3 + 3)),
      legend: { X: "player 0", O: "player 1", ".": "empty" },
      caption: this.winner !== null ? `player ${this.winner} won` : `player ${this.toMove} (${MARK[this.toMove]}) to move`,
    };
  }

  /** The opening position (board after the random opening moves) and who moves first. */
  protected instanceState(): AnchorValue {
    return { board: this.board.join(""), toMove: this.toMove };
  }

  protected anchorState(): AnchorValue {
    return { board: this.board.join(""), toMove: this.toMove };
  }

  private emptyCells(): number[] {
    const out: number[] = [];
    for (let i = 0; i < 9; i++) if (this.board[i] === ".") out.push(i);
    return out;
  }

  private boardText(): string {
    return ["  a b c", ...[0, 1, 2].map((r) => `${r + 1} ${this.board.slice(r * 3, r * 3 + 3).join(" ")}`)].join("\n");
  }

  private render(note: string): string {
    const p = this.toMove;
    return `${note ? note + "\n" : ""}${this.boardText()}\nYou are player ${p} (${MARK[p]}). Your move.`;
  }
}

/** "b2", "B2", "2b", "b 2", "row 2 col 2" / "row 2, column 2" or a number 1-9 (row-major) to a cell index. */
function parseCell(raw: string): number | null {
  const t = normalizeAction(extractAction(raw)).replace(/[.!]$/, "");
  let m = t.match(/^([abc])\s*([123])$/) ?? null;
  if (m) return (Number(m[2]) - 1) * 3 + COLS.indexOf(m[1]);
  m = t.match(/^([123])\s*([abc])$/);
  if (m) return (Number(m[1]) - 1) * 3 + COLS.indexOf(m[2]);
  m = t.match(/^row\s*([123]),?\s*(?:col|column)\s*([123])$/);
  if (m) return (Number(m[1]) - 1) * 3 + Number(m[2]) - 1;
  m = t.match(/^([1-9])$/);
  if (m) return Number(m[1]) - 1;
  return null;
}

export const ticTacToeSpec: EnvSpec<TicTacToeConfig> = {
  id: "tictactoe",
  title: "Tic-tac-toe (two-player)",
  description:
    "Self-play tic-tac-toe (SPIRAL / MARS): both players act through step(); currentAgent() names the player to move; rewards +1/-1 per player on a win, 0 on a draw.",
  configSchema: ticTacToeConfigSchema,
  create: (config) => new TicTacToeEnv(config),
};
