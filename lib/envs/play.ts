// Plays one episode with a policy and records every turn: the shape the baseline job,
// the tests and the rollout worker store (observation, action, reward, anchor, ...).
import type { Env, EnvView, StepInfo } from "./types";

/** Chooses the action text for the agent to act (env.currentAgent()) given its observation. */
export type Policy = (env: Env, observation: string, turnIndex: number) => string;

export interface PlayedTurn {
  /** The observation the action was taken in. */
  observation: string;
  action: string;
  reward: number;
  valid: boolean;
  /** Anchor key of the state the action was taken in (GiGPO groups turns by it). */
  anchor: string;
  /** Acting player (0 for single-agent environments). */
  agent: number;
  done: boolean;
  info: StepInfo;
  /** Two-player games: reward per player for this turn. */
  rewards?: number[];
  /** env.view() of the state the action was taken in (unless options.recordView is false). */
  view?: EnvView;
}

export interface PlayedEpisode {
  turns: PlayedTurn[];
  /** Sum of the acting players' rewards (single-agent: the return). */
  totalReward: number;
  /** Return per player (length env.numAgents). */
  returns: number[];
  /** The final turn reported success. */
  success: boolean;
  length: number;
  truncated: boolean;
}

export interface PlayOptions {
  /** Store env.view() on every turn for the UI (default true; benchmarks turn it off). */
  recordView?: boolean;
}

export function playEpisode(env: Env, seed: number, policy: Policy, options: PlayOptions = {}): PlayedEpisode {
  const recordView = options.recordView ?? true;
  let observation = env.reset(seed);
  const turns: PlayedTurn[] = [];
  const returns = new Array<number>(env.numAgents).fill(0);
  let truncated = false;
  for (let t = 0; ; t++) {
    // An env that never ends would hang a worker: maxTurns is a hard bound.
    if (t > env.maxTurns) throw new Error(`${env.id}: episode exceeded maxTurns=${env.maxTurns} without ending`);
    const agent = env.currentAgent() ?? 0;
    const anchor = env.anchorKey();
    const view = recordView ? env.view() : undefined;
    const action = policy(env, observation, t);
    const res = env.step(action);
    turns.push({
      observation,
      action,
      reward: res.reward,
      valid: res.info.valid,
      anchor,
      agent,
      done: res.done,
      info: res.info,
      ...(res.rewards ? { rewards: res.rewards } : {}),
      ...(view ? { view } : {}),
    });
    if (res.rewards)
      res.rewards.forEach((r, i) => {
        returns[i] += r;
      });
    else returns[agent] += res.reward;
    observation = res.observation;
    if (res.done || res.truncated) {
      truncated = res.truncated;
      break;
    }
  }
  const last = turns[turns.length - 1];
  return {
    turns,
    totalReward: turns.reduce((s, x) => s + x.reward, 0),
    returns,
    success: last.info.success,
    length: turns.length,
    truncated,
  };
}
