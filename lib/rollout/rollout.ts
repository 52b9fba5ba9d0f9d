// The multi-turn rollout loop: G episodes of each task played side by side, one batched generate
// call per turn across every episode still running (the engine's batch is the whole step).
import type { Turn } from "../credit";
import type { Env, EnvView, StepInfo } from "../envs/types";
import type { GroupInput } from "../schemas/rollouts";
import type { ContextConfig } from "../schemas/context";
import { advanceContext, buildPrompt, newContext, readResponse, type EpisodeContext } from "./context";

export interface GenRequest {
  prompt: string;
  /** Restrict the completion to one of these strings (the admissible actions), or free text. */
  allowed: string[] | null;
}

export interface GenResult {
  text: string;
  promptIds: number[];
  responseIds: number[];
  /** log-prob of each response token under the sampling policy */
  logprobs: number[];
  /** entropy of the sampling policy at each response token (when the generator reports it) */
  entropies?: number[];
  /** each response token's text on its own (when the generator has a tokenizer) */
  tokenTexts?: string[];
}

/** One batched generation call (the engine, an ONNX policy, or a scripted policy in tests). */
export type Generate = (requests: GenRequest[]) => Promise<GenResult[]>;

export interface RolloutTurn {
  observation: string;
  prompt: string;
  response: string;
  /** the action text handed to env.step (the response minus any memory) */
  action: string;
  reward: number;
  valid: boolean;
  done: boolean;
  anchor: string;
  agent: number | null;
  info: StepInfo;
  view?: EnvView;
  promptIds: number[];
  responseIds: number[];
  logprobs: number[];
  entropies?: number[];
  tokenTexts?: string[];
  /** the admissible actions sampling was restricted to (the update must score under the same set) */
  allowed: string[] | null;
  /** credit inputs filled in after the rollout by the trainer's providers (e.g. IGPO's infoGain) */
  inputs?: TurnInputs;
}

/** lib/credit turn fields a provider computes after the rollout (the rest the rollout records itself). */
export type TurnInputs = Partial<Pick<Turn, "value" | "q1" | "q2" | "v2" | "infoGain" | "judgeScore" | "segment" | "toolResult" | "highValue">>;

export interface RolloutTrajectory {
  turns: RolloutTurn[];
  reward: number;
  success: boolean;
  truncated: boolean;
}

export interface RolloutGroup {
  uid: string;
  taskSeed: number;
  trajectories: RolloutTrajectory[];
}

export interface RolloutOptions {
  /** Makes a fresh environment instance (one per episode: they run side by side). */
  makeEnv: () => Env;
  tasks: { uid: string; taskSeed: number }[];
  groupSize: number;
  context: ContextConfig;
  /** include env.instructions() in every prompt (off for tiny models trained from scratch) */
  instructions: boolean;
  /** sample only admissible actions where the environment has a finite set */
  restrictToAdmissible: boolean;
  /** store env.view() on each turn (for the UI) */
  recordView: boolean;
  generate: Generate;
  signal?: AbortSignal;
}

interface Live {
  group: number;
  env: Env;
  obs: string;
  ctx: EpisodeContext;
  traj: RolloutTrajectory;
}

export async function rollout(o: RolloutOptions): Promise<RolloutGroup[]> {
  const groups: RolloutGroup[] = o.tasks.map((t) => ({ uid: t.uid, taskSeed: t.taskSeed, trajectories: [] }));
  let live: Live[] = [];
  o.tasks.forEach((t, g) => {
    for (let j = 0; j < o.groupSize; j++) {
      const env = o.makeEnv();
      const traj: RolloutTrajectory = { turns: [], reward: 0, success: false, truncated: false };
      groups[g].trajectories.push(traj);
      live.push({ group: g, env, obs: env.reset(t.taskSeed), ctx: newContext(), traj });
    }
  });
  while (live.length) {
    if (o.signal?.aborted) throw o.signal.reason ?? new Error("aborted");
    const requests = live.map((l) => ({
      prompt: buildPrompt(o.context, l.ctx, l.obs, { instructions: o.instructions ? l.env.instructions() : null }),
      allowed: o.restrictToAdmissible && o.context.strategy !== "memory" ? l.env.admissibleActions() : null,
    }));
    const results = await o.generate(requests);
    if (results.length !== requests.length) throw new Error(`generate returned ${results.length} responses for ${requests.length} prompts`);
    const next: Live[] = [];
    live.forEach((l, i) => {
      const r = results[i];
      const anchor = l.env.anchorKey();
      const agent = l.env.numAgents > 1 ? l.env.currentAgent() : null;
      const view = o.recordView ? l.env.view() : undefined;
      const { action } = readResponse(o.context, r.text);
      const step = l.env.step(action);
      l.traj.turns.push({
        observation: l.obs,
        prompt: requests[i].prompt,
        response: r.text,
        action,
        reward: step.reward,
        valid: step.info.valid,
        done: step.done,
        anchor,
        agent,
        info: step.info,
        ...(view ? { view } : {}),
        promptIds: r.promptIds,
        responseIds: r.responseIds,
        logprobs: r.logprobs,
        ...(r.entropies ? { entropies: r.entropies } : {}),
        ...(r.tokenTexts ? { tokenTexts: r.tokenTexts } : {}),
        allowed: requests[i].allowed,
      });
      l.traj.reward += step.reward;
      advanceContext(o.context, l.ctx, l.obs, r.text);
      l.obs = step.observation;
      if (step.done || step.truncated) {
        l.traj.success = step.info.success;
        l.traj.truncated = step.truncated && !step.done;
      } else next.push(l);
    });
    live = next;
  }
  return groups;
}

/** A played trajectory's id in its step: its group's uid and its place in the group (what credit is keyed by). */
export function rolloutTrajectoryId(uid: string, index: number): string {
  return `${uid}-t${index}`;
}

/** A played group as the store takes it (lib/schemas/rollouts GroupInput), without credit. */
export function toStoredGroup(g: RolloutGroup, envId: string): GroupInput {
  return {
    uid: g.uid,
    envId,
    taskSeed: g.taskSeed,
    trajectories: g.trajectories.map((t) => ({
      reward: t.reward,
      success: t.success,
      truncated: t.truncated,
      turns: t.turns.map((u) => ({
        observation: u.observation,
        action: u.response,
        reward: u.reward,
        valid: u.valid,
        done: u.done,
        anchor: u.anchor,
        agent: u.agent,
        tokenCount: u.responseIds.length,
        logprob: u.logprobs.reduce((a, b) => a + b, 0),
        ...(u.entropies?.length ? { entropy: u.entropies.reduce((a, b) => a + b, 0) / u.entropies.length } : {}),
        // per token: the trainer broadcasts the turn's advantage over its tokens, so none is stored per token
        ...(u.responseIds.length
          ? {
              tokenIds: u.responseIds,
              tokenLogprobs: u.logprobs,
              ...(u.entropies?.length === u.responseIds.length ? { tokenEntropies: u.entropies } : {}),
              ...(u.tokenTexts?.length === u.responseIds.length ? { tokenTexts: u.tokenTexts } : {}),
            }
          : {}),
        info: { ...u.info, ...(u.view ? { view: u.view } : {}), ...u.inputs },
      })),
    })),
  };
}

/** A trajectory's credit as training used it: an advantage per turn and the estimator's components per turn. */
export interface TurnCredit {
  advantages: readonly number[];
  components: Record<string, ArrayLike<unknown>>;
}

/**
 * A stored group with the credit training used (training jobs): each turn's advantage, and the
 * estimator's components in its info's `credit`. `creditOf` gets the trajectory's id
 * (rolloutTrajectoryId), so credit is matched by id, whatever order it came in.
 */
export function withCredit(g: GroupInput, creditOf: (trajectoryId: string) => TurnCredit): GroupInput {
  return {
    ...g,
    trajectories: g.trajectories.map((t, j) => {
      const c = creditOf(rolloutTrajectoryId(g.uid, j));
      return {
        ...t,
        turns: t.turns.map((u, k) => ({
          ...u,
          advantage: c.advantages[k],
          info: { ...u.info, credit: Object.fromEntries(Object.entries(c.components).map(([name, arr]) => [name, arr[k] ?? null])) },
        })),
      };
    }),
  };
}
