// Per-turn credit inputs the rollout does not record itself. Each lib/credit estimator declares the
// turn fields it `needs`; the trainer fills the ones listed here through their providers, chosen
// from those needs, so a new input (a critic value, a judge score, a progress estimate) is a new
// provider here, not a branch in the trainer. What a provider computes is put on the turn's
// `inputs`, passed to lib/credit and stored in the turn's info (recomputations read it back).
import { createEnv } from "../../lib/envs/registry";
import type { Env } from "../../lib/envs/types";
import type { Turn } from "../../lib/credit";
import type { TrainConfig } from "../../lib/schemas/train";
import { buildPrompt, newContext, advanceContext } from "../../lib/rollout/context";
import type { RolloutGroup, TurnInputs } from "../../lib/rollout/rollout";
import type { EngineClient } from "../engine-client";

export interface TurnInputContext {
  engine: EngineClient;
  cfg: TrainConfig;
  /** an environment instance for its instructions */
  probe: Env;
}

export interface TurnInputProvider {
  /** the lib/credit turn field it fills */
  field: keyof TurnInputs;
  /** fills `inputs[field]` on the turns it can (in place) */
  fill(ctx: TurnInputContext, groups: RolloutGroup[]): Promise<void>;
}

/**
 * IGPO's turn reward: how much the turn raised the policy's probability of the gold answer,
 * p_t = exp(mean token log-prob of the answer given the context after turn t), gain_t = p_t - p_{t-1}.
 */
const informationGain: TurnInputProvider = {
  field: "infoGain",
  async fill({ engine, cfg, probe }, groups) {
    const env = createEnv(cfg.envId, cfg.envConfig);
    const prompts: string[] = [];
    const answers: string[] = [];
    const where: [RolloutGroup["trajectories"][number], number][] = [];
    for (const g of groups) {
      env.reset(g.taskSeed);
      const gold = env.goldAnswer();
      if (gold === null) continue;
      for (const t of g.trajectories) {
        const ctx = newContext();
        t.turns.forEach((u, k) => {
          prompts.push(buildPrompt(cfg.context, ctx, u.observation, { instructions: cfg.instructions ? probe.instructions() : null }));
          answers.push(gold);
          where.push([t, k]);
          advanceContext(cfg.context, ctx, u.observation, u.response);
        });
      }
    }
    if (!prompts.length) return;
    const res = await engine.logprobs({ prompts, responses: answers });
    const p = res.results.map((r) => Math.exp(r.mean ?? -Infinity));
    // p of the prompt before turn k+1 minus p before turn k; the last turn (the answer) keeps gain 0.
    where.forEach(([t, k], i) => {
      const next = k + 1 < t.turns.length ? p[i + 1] : p[i];
      t.turns[k].inputs = { ...t.turns[k].inputs, infoGain: next - p[i] };
    });
  },
};

/** Every provider, by the turn field it fills. */
export const TURN_INPUT_PROVIDERS: ReadonlyMap<keyof Turn, TurnInputProvider> = new Map([informationGain].map((p) => [p.field, p]));

/** The providers an estimator's `needs` call for (fields the rollout records itself have none). */
export function providersFor(needs: readonly (keyof Turn)[]): TurnInputProvider[] {
  return needs.flatMap((f) => TURN_INPUT_PROVIDERS.get(f) ?? []);
}
