// Kuhn poker (Kuhn 1950) for self-play, as in SPIRAL's TextArena games: a three-card deck
// (J < Q < K), each player antes 1 and gets one private card; one betting round of
// check/bet then call/fold. Both players act through step(); each sees only its own card,
// so observations and anchors are per player (an imperfect-information game).
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { matchAction } from "./parse-action";
import { createRng, mixSeed } from "./rng";
import type { EnvSpec, EnvView } from "./types";

export const kuhnPokerConfigSchema = z.strictObject({
  hands: z.number().int().min(1).max(20).default(1).describe("Hands per episode; the first player alternates and chips add up."),
  maxTurns: z.number().int().min(1).max(200).default(10).describe("Turns (both players, invalid moves included) before truncation."),
});
export type KuhnPokerConfig = z.infer<typeof kuhnPokerConfigSchema>;

const CARD_NAMES = ["J", "Q", "K"];
type Move = "check" | "bet" | "call" | "fold";

export interface KuhnPokerState {
  hand: number;
  cards: [number, number];
  /** Moves of the current hand in order. */
  history: Move[];
  /** Net chips per player over the finished hands. */
  chips: [number, number];
  /** Player who acts first in the current hand. */
  first: number;
}

/** The two private cards of hand `hand` of the match dealt from `seed`. */
function dealCards(seed: number, hand: number): [number, number] {
  const deck = createRng(mixSeed("kuhnpoker", seed, hand)).shuffle([0, 1, 2]);
  return [deck[0], deck[1]];
}

export class KuhnPokerEnv extends BaseEnv {
  readonly id = "kuhnpoker";
  override readonly numAgents = 2;
  private seed = 0;
  private hand = 0;
  private cards: [number, number] = [0, 1];
  private history: Move[] = [];
  private chips: [number, number] = [0, 0];
  private lastHand = "";
  private finished = false;

  constructor(readonly config: KuhnPokerConfig) {
    super(config.maxTurns);
  }

  get state(): KuhnPokerState {
    return {
      hand: this.hand,
      cards: [...this.cards] as [number, number],
      history: this.history.slice(),
      chips: [...this.chips] as [number, number],
      first: this.first,
    };
  }

  private get first(): number {
    return this.hand % 2;
  }

  protected onReset(seed: number): string {
    this.seed = seed;
    this.chips = [0, 0];
    this.lastHand = "";
    this.finished = false;
    this.deal(0);
    return this.render("");
  }

  private deal(hand: number): void {
    this.hand = hand;
    this.history = [];
    this.cards = dealCards(this.seed, hand);
  }

  currentAgent(): number {
    return (this.first + this.history.length) % 2;
  }

  private legalMoves(): Move[] {
    const h = this.history.join(",");
    return h === "" || h === "check" ? ["check", "bet"] : ["call", "fold"];
  }

  protected onStep(actionText: string): TurnOutcome {
    const actor = this.currentAgent();
    const legal = this.legalMoves();
    // "pass" is Kuhn's own word for check-or-fold; "raise" for bet.
    const aliases: Record<string, string> = legal[0] === "check" ? { pass: "check", raise: "bet" } : { pass: "fold", see: "call" };
    const move = matchAction(actionText, legal, aliases) as Move | null;
    if (move === null) {
      return {
        observation: this.render(`Invalid action: choose one of ${legal.join(", ")}.`),
        reward: 0,
        rewards: [0, 0],
        done: false,
        info: { ...invalidInfo(), agent: actor },
      };
    }
    this.history.push(move);
    const payoff = this.handPayoff();
    if (payoff === null) {
      return {
        observation: this.render(`Player ${actor} chose ${move}.`),
        reward: 0,
        rewards: [0, 0],
        done: false,
        info: { valid: true, success: false, action: move, agent: actor },
      };
    }
    this.chips[0] += payoff[0];
    this.chips[1] += payoff[1];
    const summary = this.handSummary(payoff);
    const lastHand = this.hand + 1 >= this.config.hands;
    if (lastHand) {
      this.finished = true;
      this.lastHand = summary;
      const winner = this.chips[0] > 0 ? 0 : this.chips[1] > 0 ? 1 : null;
      // Self-play convention (both games): success = the game was decided; info.winner says by whom.
      return {
        observation: `${summary}\nGame over. Chips: player 0 ${signed(this.chips[0])}, player 1 ${signed(this.chips[1])}.`,
        reward: payoff[actor],
        rewards: payoff,
        done: true,
        info: { valid: true, success: winner !== null, action: move, agent: actor, winner, chips: [...this.chips] },
      };
    }
    this.lastHand = summary;
    this.deal(this.hand + 1);
    return {
      observation: this.render(""),
      reward: payoff[actor],
      rewards: payoff,
      done: false,
      info: { valid: true, success: false, action: move, agent: actor, handPayoff: payoff },
    };
  }

  /** Chips won per player when the hand is over, else null. */
  private handPayoff(): [number, number] | null {
    const h = this.history.join(",");
    const first = this.first;
    const second = 1 - first;
    const showdown = (stake: number): [number, number] => {
      const w = this.cards[0] > this.cards[1] ? 0 : 1;
      const out: [number, number] = [0, 0];
      out[w] = stake;
      out[1 - w] = -stake;
      return out;
    };
    const foldWin = (winner: number): [number, number] => (winner === 0 ? [1, -1] : [-1, 1]);
    switch (h) {
      case "check,check":
        return showdown(1);
      case "bet,call":
      case "check,bet,call":
        return showdown(2);
      case "bet,fold":
        return foldWin(first);
      case "check,bet,fold":
        return foldWin(second);
      default:
        return null;
    }
  }

  private handSummary(payoff: [number, number]): string {
    const moves = this.history.map((m, i) => `player ${(this.first + i) % 2} ${m}`).join(", ");
    const folded = this.history[this.history.length - 1] === "fold";
    const cards = folded ? "" : ` Cards: player 0 ${CARD_NAMES[this.cards[0]]}, player 1 ${CARD_NAMES[this.cards[1]]}.`;
    const w = payoff[0] > 0 ? 0 : 1;
    return `Hand ${this.hand + 1}: ${moves}.${cards} Player ${w} wins ${payoff[w]}.`;
  }

  admissibleActions(): string[] {
    return this.finished ? [] : this.legalMoves();
  }

  instructions(): string {
    return [
      "You are playing Kuhn poker against another player. The deck has three cards: J < Q < K.",
      "Each player antes 1 chip and gets one private card. Players act in turn: check or bet 1 chip;",
      "facing a bet, call (match it) or fold (give up the pot). If nobody folds, the higher card wins the pot.",
      `The game lasts ${this.config.hands} hand(s); the first player alternates between hands.`,
      "Each turn, answer with one move, e.g. <action>bet</action>.",
      "Reward: the chips you win or lose in a hand, given when the hand ends.",
    ].join("\n");
  }

  view(): EnvView {
    return {
      kind: "fields",
      fields: {
        hand: `${this.hand + 1}/${this.config.hands}`,
        "player 0 card": CARD_NAMES[this.cards[0]],
        "player 1 card": CARD_NAMES[this.cards[1]],
        history: this.history.join(", ") || null,
        "player 0 chips": this.chips[0],
        "player 1 chips": this.chips[1],
        "to act": this.finished ? null : this.currentAgent(),
      },
    };
  }

  /** The deal of every hand of the match (the cards alone decide a Kuhn poker instance). */
  protected instanceState(): AnchorValue {
    return Array.from({ length: this.config.hands }, (_, h) => dealCards(this.seed, h).join(""));
  }

  protected anchorState(): AnchorValue {
    // Only what the acting player can see: its own card, the betting so far, the score.
    const p = this.currentAgent();
    return { agent: p, card: CARD_NAMES[this.cards[p]], hand: this.hand, history: this.history.join(","), chips: this.chips[p] };
  }

  private render(note: string): string {
    const p = this.currentAgent();
    const moves = this.history.length ? this.history.map((m, i) => `player ${(this.first + i) % 2} ${m}`).join(", ") : "none yet";
    return [
      note,
      this.lastHand && this.history.length === 0 ? this.lastHand : "",
      `Hand ${this.hand + 1} of ${this.config.hands}. You are player ${p}. Your card: ${CARD_NAMES[this.cards[p]]}.`,
      `Betting so far: ${moves}.`,
      this.config.hands > 1 ? `Your chips so far: ${signed(this.chips[p])}.` : "",
      `Your options: ${this.legalMoves().join(", ")}.`,
    ]
      .filter(Boolean)
      .join("\n");
  }
}

function signed(n: number): string {
  return n > 0 ? `+${n}` : String(n);
}

export const kuhnPokerSpec: EnvSpec<KuhnPokerConfig> = {
  id: "kuhnpoker",
  title: "Kuhn poker (two-player)",
  description:
    "Self-play Kuhn poker (SPIRAL): three cards, one private card each, check/bet/call/fold. Both players act through step(); rewards are the chips won per player per hand.",
  configSchema: kuhnPokerConfigSchema,
  create: (config) => new KuhnPokerEnv(config),
};
