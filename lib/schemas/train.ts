// The training job's config. Defaults are the demo run: a tiny transformer learns random 6x6
// FrozenLake maps from scratch on CPU with GiGPO (4x4 maps were too few for a held-out set:
// 200 seeds gave 153 distinct maps). `npm run bench:train` measures how fast it learns.
import { z } from "zod";
import { contextSchema } from "./context";
import { initParamsSchema, loraSchema, tinyShapeSchema, updateKnobs, type UpdateParams } from "./engine";

/** The tiny model's fields: the engine's `init.tiny` fields (lib/schemas/engine.ts) under the config's names. */
const TINY_FIELDS = { layers: "n_layer", heads: "n_head", dModel: "d_model", contextLength: "context_length" } as const;
const tiny = tinyShapeSchema.shape;

export const tinyModelSchema = z
  .object({
    kind: z.literal("tiny"),
    layers: tiny[TINY_FIELDS.layers].describe("Transformer blocks."),
    heads: tiny[TINY_FIELDS.heads].describe("Attention heads per block."),
    dModel: tiny[TINY_FIELDS.dModel].describe("Width of the residual stream."),
    // the demo's prompts and responses fit 80 tokens; a longer context only costs time
    contextLength: tiny[TINY_FIELDS.contextLength].unwrap().default(80).describe("Longest prompt + response in tokens."),
    tokenizer: z.enum(["char", "word"]).default("char").describe("char: one token per character (grids); word: words of the environments' text."),
  })
  .strict();
export type TinyModel = z.infer<typeof tinyModelSchema>;

/** A tiny model's shape as the engine's init takes it (`tiny`). */
export function tinyInitShape(model: TinyModel): Record<(typeof TINY_FIELDS)[keyof typeof TINY_FIELDS], number> {
  return Object.fromEntries(Object.entries(TINY_FIELDS).map(([name, field]) => [field, model[name as keyof typeof TINY_FIELDS]])) as never;
}

export const hfModelSchema = z
  .object({
    kind: z.literal("hf"),
    path: z.string().min(1).describe("A local Hugging Face causal LM directory (nothing is downloaded)."),
    lora: loraSchema.pick({ r: true, alpha: true }).nullable().default(null).describe("LoRA adapters instead of full fine-tuning."),
  })
  .strict();

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
/** The config's names of the engine's update knobs where they are not the camelCase of the protocol's. */
const RENAMED = { lossAggMode: "lossAggregation" } as const;
type ConfigName<K extends string> = Camel<K> extends keyof typeof RENAMED ? (typeof RENAMED)[Camel<K>] : Camel<K>;
const configName = (knob: string): string => {
  const c = knob.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());
  return (RENAMED as Record<string, string>)[c] ?? c;
};
type Knob = keyof typeof updateKnobs;

/** The engine's update knobs (lib/schemas/engine.ts: ranges and defaults) under the config's names. */
const ppo = Object.fromEntries(Object.entries(updateKnobs).map(([k, s]) => [configName(k), s])) as unknown as {
  [K in Knob as ConfigName<K>]: (typeof updateKnobs)[K];
};

export const trainConfigSchema = z
  .object({
    envId: z.string().min(1).default("frozenlake").describe("Environment id from the environment registry."),
    envConfig: z.record(z.string(), z.unknown()).default({}).describe("Environment config; omitted fields take the environment's defaults."),
    estimator: z.string().min(1).default("gigpo").describe("Credit-assignment estimator (lib/credit registry id)."),
    estimatorParams: z.record(z.string(), z.unknown()).default({}).describe("Estimator parameters; omitted fields take its defaults."),
    groupSize: z.number().int().min(1).max(64).default(16).describe("G: rollouts per task (the group GRPO/GiGPO normalise over)."),
    groupsPerStep: z.number().int().min(1).max(512).default(16).describe("Tasks per training step."),
    steps: z.number().int().min(1).max(100_000).default(200).describe("Training steps."),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 30)
      .default(0)
      .describe("Seed of the task seeds, the model init and sampling."),
    context: contextSchema.default({ strategy: "window", turns: 0 }),
    instructions: z
      .boolean()
      .default(false)
      .describe("Put the environment's instructions in every prompt (useful for pretrained models; tiny models learn without)."),
    restrictToAdmissible: z.boolean().default(true).describe("Sample only admissible actions (where the environment has a finite set)."),
    model: z.discriminatedUnion("kind", [tinyModelSchema, hfModelSchema]).default(() => tinyModelSchema.parse({ kind: "tiny" })),
    lr: z
      .number()
      .positive()
      .max(1)
      .default(1e-3)
      .describe("AdamW learning rate (the demo, before the dual clip: held-out success 0.69 at step 30 with 1e-3, 0.49 with 3e-4)."),
    lrDecayAfter: z.number().min(0).max(1).default(0.8).describe("Halve the learning rate once greedy eval success reaches this (0 disables)."),
    temperature: z.number().positive().max(5).default(1).describe("Sampling temperature of the rollouts."),
    explorationEpsilon: z
      .number()
      .min(0)
      .max(1)
      .default(0.1)
      .describe(
        "Per turn, take a uniformly random admissible action with this probability (training rollouts only). Keeps G rollouts of a task from collapsing into identical ones, whose advantages are all zero.",
      ),
    maxNewTokens: z.number().int().min(1).max(4096).default(32).describe("Longest response when sampling free text."),
    epochs: z.number().int().min(1).max(16).default(2).describe("PPO epochs over each batch."),
    minibatchSize: z.number().int().min(1).max(65_536).default(512).describe("Samples per optimiser step."),
    clipRatio: ppo.clipRatio.describe("PPO clip range."),
    clipRatioC: ppo.clipRatioC.describe("Dual clip: where the advantage is negative, the loss of a token is at most c times it, however large its ratio."),
    klCoef: initParamsSchema.shape.kl_coef.describe("KL penalty to the frozen initial policy (0 disables)."),
    klEstimator: ppo.klEstimator.describe("KL estimator: k1 = log pi - log pi_ref, k2 = (log pi - log pi_ref)^2 / 2, k3 = r - 1 - log r with r = pi_ref / pi."),
    entropyCoef: z
      .number()
      .min(0)
      .default(0.01)
      .describe(
        "Entropy bonus coefficient. On the demo (with FrozenLake's farNeighbours line), 0.01 took 3 of seeds 0-3 to 0.9 held-out success (at steps 40, 50 and 100; the fourth peaked at 0.895), against 2 of 4 by step 120 without it (docs/benchmarks.md).",
      ),
    lossAggregation: ppo.lossAggregation.describe("token-mean: every response token counts the same; seq-mean-token-mean: every response counts the same."),
    dropZeroAdvantage: z.boolean().default(true).describe("Skip samples whose advantage is exactly 0 (they carry no gradient signal)."),
    evalInterval: z.number().int().min(1).default(10).describe("Greedy evaluation on held-out tasks every this many steps."),
    evalEpisodes: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(200)
      .describe("Held-out tasks per evaluation: distinct instances that training never draws (fewer when the environment has few instances)."),
    checkpointInterval: z.number().int().min(1).default(10).describe("Save a checkpoint every this many steps (a resumed job restarts from the last one)."),
    exportOnnx: z.boolean().default(true).describe("Export the final policy to ONNX (tiny models)."),
    targetSuccess: z.number().min(0).max(1).nullable().default(null).describe("Stop early once greedy eval success reaches this."),
    device: z.enum(["auto", "cpu", "cuda"]).default("auto").describe("auto: CUDA where available, else CPU."),
    threads: z
      .number()
      .int()
      .min(1)
      .max(256)
      .nullable()
      .default(1)
      .describe("torch CPU threads (1 is fastest for tiny models on small machines; null: torch's default)."),
  })
  .strict();
export type TrainConfig = z.infer<typeof trainConfigSchema>;

/**
 * The update knobs a config sets, as the engine's update takes them: every knob whose config name
 * (RENAMED, else its camelCase) is a config field. The trainer sets `lr` itself (its schedule).
 */
export function updateKnobsOf(cfg: TrainConfig): Omit<UpdateParams, "samples"> {
  const fields = cfg as unknown as Record<string, unknown>;
  return Object.fromEntries(Object.keys(updateKnobs).flatMap((k) => (configName(k) in fields ? [[k, fields[configName(k)]]] : [])));
}
