// The training job's config. Defaults are the demo run: a tiny transformer learns random 6x6
// FrozenLake maps from scratch on CPU with GiGPO (4x4 maps were too few for a held-out set:
// 200 seeds gave 153 distinct maps). `npm run bench:train` measures how fast it learns.
import { z } from "zod";
import { contextSchema } from "./context";

export const tinyModelSchema = z
  .object({
    kind: z.literal("tiny"),
    layers: z.number().int().min(1).max(24).default(2).describe("Transformer blocks."),
    heads: z.number().int().min(1).max(32).default(4).describe("Attention heads per block."),
    dModel: z.number().int().min(8).max(2048).default(64).describe("Width of the residual stream."),
    contextLength: z.number().int().min(16).max(8192).default(80).describe("Longest prompt + response in tokens."),
    tokenizer: z.enum(["char", "word"]).default("char").describe("char: one token per character (grids); word: words of the environments' text."),
  })
  .strict();

export const hfModelSchema = z
  .object({
    kind: z.literal("hf"),
    path: z.string().min(1).describe("A local Hugging Face causal LM directory (nothing is downloaded)."),
    lora: z
      .object({ r: z.number().int().min(1).default(8), alpha: z.number().positive().default(16) })
      .strict()
      .nullable()
      .default(null)
      .describe("LoRA adapters instead of full fine-tuning."),
  })
  .strict();

/** The KL estimators the engine's `update` implements (workers/engine/ppo.py); the engine protocol's `kl_estimator` is this schema. */
export const klEstimatorSchema = z.enum(["k1", "k2", "k3"]);

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
    model: z
      .discriminatedUnion("kind", [tinyModelSchema, hfModelSchema])
      .default({ kind: "tiny", layers: 2, heads: 4, dModel: 64, contextLength: 80, tokenizer: "char" }),
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
    clipRatio: z.number().min(0).max(1).default(0.2).describe("PPO clip range."),
    clipRatioC: z
      .number()
      .gt(1)
      .default(3)
      .describe("Dual clip: where the advantage is negative, the loss of a token is at most c times it, however large its ratio (verl's clip_ratio_c)."),
    klCoef: z.number().min(0).default(0).describe("KL penalty to the frozen initial policy (0 disables)."),
    klEstimator: klEstimatorSchema.default("k3"),
    entropyCoef: z
      .number()
      .min(0)
      .default(0.01)
      .describe(
        "Entropy bonus coefficient. On the demo (with FrozenLake's farNeighbours line), 0.01 took 3 of seeds 0-3 to 0.9 held-out success (at steps 40, 50 and 100; the fourth peaked at 0.895), against 2 of 4 by step 120 without it (docs/benchmarks.md).",
      ),
    lossAggregation: z.enum(["token-mean", "seq-mean-token-mean"]).default("token-mean"),
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
