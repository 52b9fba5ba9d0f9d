// The episode bookkeeping every environment shares: turn counting, truncation at maxTurns,
// "step after the end" handling and anchor keys. Each environment only writes its rules
// (onReset / onStep) and renderers; this keeps the Env conventions in one place.
import { canonicalAnchorKey } from "../credit/anchor-key";
import type { AnchorValue } from "../credit/types";
import type { Env, EnvView, StepInfo } from "./types";

/** What an environment's rules return for one turn; BaseEnv adds truncation. */
export interface TurnOutcome {
  observation: string;
  reward: number;
  done: boolean;
  info: StepInfo;
  rewards?: number[];
}

export abstract class BaseEnv implements Env {
  abstract readonly id: string;
  readonly numAgents: number = 1;
  /** Turns taken in the current episode (valid or not: an invalid action still costs a turn). */
  protected turnIndex = 0;
  private started = false;
  private ended = false;
  private lastObservation = "";
  private instance = "";

  constructor(readonly maxTurns: number) {}

  reset(seed: number): string {
    this.started = true;
    this.ended = false;
    this.turnIndex = 0;
    this.lastObservation = this.onReset(seed);
    // Taken at reset: the state moves on during the episode, the instance does not.
    this.instance = canonicalAnchorKey({ env: this.id, instance: this.instanceState() });
    return this.lastObservation;
  }

  step(actionText: string): ReturnType<Env["step"]> {
    if (!this.started) throw new Error(`${this.id}: call reset(seed) before step()`);
    if (this.ended) {
      // A driver bug, not agent text: answer without changing anything rather than crash a job.
      return {
        observation: this.lastObservation,
        reward: 0,
        done: true,
        truncated: false,
        info: { valid: false, success: false, action: null, error: "the episode has already ended" },
        ...(this.numAgents > 1 ? { rewards: new Array<number>(this.numAgents).fill(0) } : {}),
      };
    }
    const out = this.onStep(typeof actionText === "string" ? actionText : "");
    this.turnIndex++;
    const truncated = !out.done && this.turnIndex >= this.maxTurns;
    this.ended = out.done || truncated;
    this.lastObservation = out.observation;
    return {
      observation: out.observation,
      reward: out.reward,
      done: out.done,
      truncated,
      info: out.info,
      ...(out.rewards ? { rewards: out.rewards } : {}),
    };
  }

  /** The episode is over (done or truncated). */
  get isOver(): boolean {
    return this.ended;
  }

  /** Turns taken so far in this episode. */
  get turns(): number {
    return this.turnIndex;
  }

  currentAgent(): number | null {
    return null;
  }

  goldAnswer(): string | null {
    return null;
  }

  anchorKey(): string {
    return canonicalAnchorKey({ env: this.id, state: this.anchorState() });
  }

  instanceKey(): string {
    if (!this.started) throw new Error(`${this.id}: call reset(seed) before instanceKey()`);
    return this.instance;
  }

  abstract admissibleActions(): string[] | null;
  abstract instructions(): string;
  abstract view(): EnvView;

  /** The agent-observable state as a JSON value; equal states must give equal values. */
  protected abstract anchorState(): AnchorValue;
  /** What reset generated (the task instance) as a JSON value, read right after onReset. */
  protected abstract instanceState(): AnchorValue;
  protected abstract onReset(seed: number): string;
  protected abstract onStep(actionText: string): TurnOutcome;
}

/** StepInfo for text that is not an admissible command (state unchanged). */
export function invalidInfo(action: string | null = null, reason = "not an admissible action"): StepInfo {
  return { valid: false, success: false, action, error: reason };
}
