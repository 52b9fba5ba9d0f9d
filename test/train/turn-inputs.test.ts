// The trainer's per-turn credit inputs: providers are chosen from an estimator's `needs` (no
// estimator names in the trainer), and IGPO's information gain is p_{t+1} - p_t of the gold
// answer's probability under the policy (the last turn keeps 0), filled in from the engine's log-probs.
import { describe, expect, it } from "vitest";
import { estimators, ESTIMATOR_IDS } from "../../lib/credit";
import { createEnv } from "../../lib/envs/registry";
import { rollout } from "../../lib/rollout/rollout";
import { trainConfigSchema } from "../../lib/schemas/train";
import type { EngineClient } from "../../workers/engine-client";
import { providersFor, TURN_INPUT_PROVIDERS } from "../../workers/runners/turn-inputs";

describe("turn input providers", () => {
  it("are chosen from the estimator's needs: IGPO gets information gain, estimators that need only recorded fields get none", () => {
    expect(providersFor(estimators.igpo.needs).map((p) => p.field)).toEqual(["infoGain"]);
    for (const id of ESTIMATOR_IDS) {
      const fields = providersFor(estimators[id].needs).map((p) => p.field);
      expect(fields.every((f) => estimators[id].needs.includes(f))).toBe(true);
    }
    expect(providersFor(estimators.grpo.needs)).toEqual([]);
    expect(providersFor(estimators.gigpo.needs)).toEqual([]);
    expect([...TURN_INPUT_PROVIDERS.keys()]).toEqual(["infoGain"]);
  });

  it("information gain: one log-prob request per turn for the gold answer; gain_t = p_{t+1} - p_t, 0 on the last turn", async () => {
    const cfg = trainConfigSchema.parse({ envId: "searchqa", envConfig: { maxTurns: 3 }, estimator: "igpo" });
    const makeEnv = () => createEnv(cfg.envId, cfg.envConfig);
    const env = makeEnv();
    const groups = await rollout({
      makeEnv,
      tasks: [
        { uid: "g0", taskSeed: 3 },
        { uid: "g1", taskSeed: 4 },
      ],
      groupSize: 2,
      context: cfg.context,
      instructions: false,
      restrictToAdmissible: false,
      recordView: false,
      // a scripted policy that searches until truncation (the provider reads texts only)
      generate: async (reqs) => reqs.map(() => ({ text: "search[founder]", promptIds: [1], responseIds: [2], logprobs: [0] })),
    });
    const turns = groups.flatMap((g) => g.trajectories.flatMap((t) => t.turns));
    expect(turns.length).toBeGreaterThan(4);
    const calls: { prompts: string[]; responses: string[] }[] = [];
    // p_i = the i-th request's probability, distinct for every request
    const p = (i: number) => 0.01 * (i + 1) + 0.001 * i * i;
    const engine = {
      logprobs: async (req: { prompts: string[]; responses: string[] }) => {
        calls.push(req);
        return { results: req.prompts.map((_, i) => ({ mean: Math.log(p(i)) })) };
      },
    } as unknown as EngineClient;
    for (const prov of providersFor(estimators.igpo.needs)) await prov.fill({ engine, cfg, probe: makeEnv() }, groups);

    expect(calls).toHaveLength(1);
    expect(calls[0].prompts).toHaveLength(turns.length);
    const gold = (seed: number) => (env.reset(seed), env.goldAnswer());
    expect(calls[0].responses).toEqual(groups.flatMap((g) => g.trajectories.flatMap((t) => t.turns.map(() => gold(g.taskSeed)))));
    let i = 0;
    for (const t of groups.flatMap((g) => g.trajectories))
      t.turns.forEach((u, k) => {
        const last = k === t.turns.length - 1;
        expect(u.inputs?.infoGain).toBeCloseTo(last ? 0 : p(i + 1) - p(i), 12);
        i++;
      });
  });
});
