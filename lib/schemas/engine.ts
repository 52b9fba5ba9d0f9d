// The engine protocol's one definition (workers/engine/PROTOCOL.md): every command's params and
// result as zod schemas. The client (workers/engine-client.ts) checks every answer against the
// result schemas; scripts/gen-engine-protocol.ts turns both into workers/engine/protocol.schema.json
// (the Python engine validates every request against it), workers/engine/protocol_types.py (a
// dataclass per command's params with its defaults, a TypedDict per result) and PROTOCOL.md's
// parameter tables. The train config (lib/schemas/train.ts) takes its PPO and tiny-model fields
// from here, so each knob, its range and its default are written once.
import { z } from "zod";

export const ENGINE_PROTOCOL_VERSION = 1;

/** The KL estimators the engine's `update` implements (workers/engine/ppo.py). */
export const klEstimatorSchema = z.enum(["k1", "k2", "k3"]);

// ---------------------------------------------------------------------------------------------
// Result schemas (non-finite numbers arrive as null). The client checks every answer against them;
// scripts/gen-engine-protocol.ts turns them into the TypedDicts the engine builds its answers
// with (workers/engine/protocol_types.py).
// ---------------------------------------------------------------------------------------------

const int = z.number().int();
const ids = z.array(int.nonnegative());
const num = z.number();
const numOrNull = z.number().nullable();
const metrics = z.record(z.string(), numOrNull);

export const pingResultSchema = z.object({
  pong: z.literal(true),
  initialized: z.boolean(),
  protocol_version: int,
});

export const infoResultSchema = z.object({
  protocol_version: int,
  initialized: z.boolean(),
  torch_version: z.string(),
  python_version: z.string(),
  cuda_available: z.boolean(),
  threads: int,
  pid: int,
  // present once a model is loaded
  model: z.string().optional(),
  model_kind: z.enum(["tiny", "hf"]).optional(),
  device: z.string().optional(),
  precision: z.enum(["fp32", "bf16-autocast"]).optional(),
  num_params: int.optional(),
  trainable_params: int.optional(),
  vocab_size: int.optional(),
  context_length: int.nullable().optional(),
  tokenizer_kind: z.string().optional(),
  eos_id: int.nullable().optional(),
  pad_id: int.optional(),
  has_reference: z.boolean().optional(),
  lora: z.boolean().optional(),
  lr: num.optional(),
  update_steps: int.optional(),
  seed: int.optional(),
  tiny: z.record(z.string(), z.number()).optional(),
});

export const finishReasonSchema = z.enum(["length", "eos", "allowed", "stop"]);

export const generatedResponseSchema = z.object({
  prompt_index: int.nonnegative(),
  prompt_ids: ids,
  response_ids: ids,
  logprobs: z.array(numOrNull),
  /** entropy (nats) of the policy's distribution at each sampled token */
  entropies: z.array(numOrNull),
  /** each response token's text on its own (specials included), for display */
  token_texts: z.array(z.string()),
  text: z.string(),
  finish_reason: finishReasonSchema,
});

export const generateResultSchema = z.object({
  responses: z.array(generatedResponseSchema),
  metrics,
});

export const scoredResponseSchema = z.object({
  prompt_ids: ids,
  response_ids: ids,
  logprobs: z.array(numOrNull),
  /** entropy (nats) of the scored model's distribution at each response token, as generate reports it */
  entropies: z.array(numOrNull),
  token_texts: z.array(z.string()),
  sum: numOrNull,
  mean: numOrNull,
  num_tokens: int.nonnegative(),
});

export const logprobsResultSchema = z.object({ results: z.array(scoredResponseSchema) });

export const updateResultSchema = z.object({
  metrics: z.object({
    "losses/loss": numOrNull,
    "losses/pg_loss": numOrNull,
    "losses/kl": numOrNull,
    "losses/entropy": numOrNull,
    "losses/clip_frac": numOrNull,
    "losses/dual_clip_frac": numOrNull,
    "losses/approx_kl": numOrNull,
    "losses/grad_norm": numOrNull,
    "perf/num_tokens": int,
    "perf/num_samples": int,
    "perf/optimizer_steps": int,
    "perf/update_seconds": num,
    "perf/lr": num,
  }),
  update_steps: int,
});

export const saveResultSchema = z.object({ path: z.string(), files: z.array(z.string()) });

export const exportOnnxResultSchema = z.object({
  path: z.string(),
  tokenizer_path: z.string(),
  manifest_path: z.string(),
  opset: int,
  max_abs_diff: numOrNull,
});

export const shutdownResultSchema = z.object({ shutting_down: z.literal(true) });

/** Every command's result: with requestParamsSchemas, the input of scripts/gen-engine-protocol.ts. */
export const resultSchemas = {
  ping: pingResultSchema,
  info: infoResultSchema,
  init: infoResultSchema,
  generate: generateResultSchema,
  logprobs: logprobsResultSchema,
  update: updateResultSchema,
  save: saveResultSchema,
  load: infoResultSchema,
  export_onnx: exportOnnxResultSchema,
  shutdown: shutdownResultSchema,
} as const;

export type EngineCommand = keyof typeof resultSchemas;
export type EngineResult<C extends EngineCommand> = z.infer<(typeof resultSchemas)[C]>;
export type GeneratedResponse = z.infer<typeof generatedResponseSchema>;
export type GenerateResult = z.infer<typeof generateResultSchema>;
export type UpdateResult = z.infer<typeof updateResultSchema>;

// ---------------------------------------------------------------------------------------------
// Request params: the protocol's one definition. scripts/gen-engine-protocol.ts turns these (and
// the result schemas above) into workers/engine/protocol.schema.json, which the Python engine
// validates every request against, into workers/engine/protocol_types.py (a dataclass per
// command's params, a TypedDict per result) and into PROTOCOL.md's parameter tables. A
// `.default()` here is THE default: the engine reads it from the generated dataclasses (its
// commands, its loss and its model take them as they are), and the client sends only what its
// caller set.
// A range or choice written here is checked by the engine's schema validation, not again by hand.
// ---------------------------------------------------------------------------------------------

const count = int.min(1);
const tokenIds = z.array(int.nonnegative());
const device = z.enum(["auto", "cpu", "cuda"]);

export const chatMessageSchema = z.looseObject({ role: z.string(), content: z.string() });
export const promptSchema = z.union([z.string(), z.array(chatMessageSchema)]);
/** Allowed completions: strings (tokenized without specials), single token ids, or token-id arrays. */
export const allowedSetSchema = z
  .array(z.union([z.string(), int.nonnegative(), tokenIds.min(1)]))
  .min(1)
  .describe("allowed completions: strings (encoded without special tokens), token ids, or token-id arrays");

const promptFields = {
  prompts: z.array(promptSchema).optional().describe("strings or chat-message arrays `[{role, content}]`; exactly one of `prompts` / `prompt_ids`"),
  prompt_ids: z.array(tokenIds.min(1)).optional().describe("token-id arrays, used as is; exactly one of `prompts` / `prompt_ids`"),
};
const temperature = z.number().min(0).default(1).describe("`0` = greedy (log-probs reported at T = 1)");
const allowedFields = {
  allowed: allowedSetSchema.optional().describe("one `allowed` set for every prompt (see above)"),
  allowed_per_prompt: z
    .array(allowedSetSchema.nullable())
    .optional()
    .describe("one set per prompt (`null` = unrestricted); at most one of `allowed` / `allowed_per_prompt`"),
};

/** The tiny transformer's shape (init's `tiny`); the train config's model fields are these. */
export const tinyShapeSchema = z.strictObject({
  n_layer: count.max(24).default(2).describe("transformer blocks"),
  n_head: count.max(32).default(4).describe("attention heads per block; must divide `d_model`"),
  d_model: count.min(8).max(2048).default(64).describe("residual stream width"),
  context_length: count.min(16).max(8192).default(256).describe("longest prompt + response in tokens"),
  mlp_ratio: count.default(4).describe("MLP hidden width = `mlp_ratio * d_model`"),
});

/** A LoRA adapter (init's `lora`); the train config's `lora` is its rank and scaling. */
export const loraSchema = z.strictObject({
  r: count.default(8).describe("adapter rank"),
  alpha: z.number().gt(0).default(16).describe("scaling"),
  target_modules: z
    .union([z.string(), z.array(z.string())])
    .default("all-linear")
    .describe("module names, or `all-linear`"),
});

export const initParamsSchema = z.strictObject({
  model: z
    .string()
    .default("tiny")
    .describe('`"tiny"`, or the path of a local Hugging Face causal-LM directory (`AutoModelForCausalLM` + `AutoTokenizer`, `local_files_only`)'),
  tiny: tinyShapeSchema.optional().describe("shape of the tiny model (vocab size comes from the tokenizer)"),
  tokenizer: z
    .strictObject({
      kind: z
        .enum(["word", "char", "hf"])
        .optional()
        .describe('tiny: `"word"` (default; `corpus` required) or `"char"` (no corpus: printable ASCII + `\\t\\n`); HF: `"hf"`'),
      corpus: z.array(z.string()).optional().describe("tiny: the texts the vocabulary is built from"),
      path: z.string().optional().describe("HF: tokenizer directory (default: the model directory)"),
      chat_template: z.boolean().optional().describe("HF: wrap string prompts as one user message (default: when the tokenizer has a template)"),
    })
    .optional()
    .describe("the tokenizer"),
  lora: loraSchema.optional().describe("HF only: train a LoRA adapter (peft); only the adapter trains"),
  adapter: z
    .string()
    .optional()
    .describe(
      "HF only, instead of `lora`: a saved LoRA adapter directory (peft `save_pretrained`: `adapter_config.json` and its weights) put on `model`, the base model directory; the policy is base + adapter, its rank and targets read from the adapter's config",
    ),
  optimizer: z
    .strictObject({
      lr: z.number().min(0).default(3e-4).describe("AdamW learning rate"),
      betas: z
        .tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)])
        .default([0.9, 0.99])
        .describe("AdamW betas"),
      weight_decay: z.number().min(0).default(0).describe("decoupled weight decay"),
      eps: z.number().gt(0).default(1e-8).describe("AdamW epsilon"),
    })
    .optional()
    .describe("AdamW"),
  kl_coef: z
    .number()
    .min(0)
    .default(0)
    .describe(
      "default KL coefficient of `update`; **> 0 keeps a frozen reference** (a copy of the initial weights; with LoRA: the base model, adapter disabled)",
    ),
  seed: int.nonnegative().default(0).describe("weight init, sampling, minibatch shuffling"),
  device: device.default("auto").describe("`auto`: CUDA with bf16 autocast when `torch.cuda.is_available()`, else CPU fp32"),
  threads: count
    .optional()
    .describe(
      "`torch.set_num_threads` (default: torch's). Use **1** where other processes share 2 cores: with 2 threads beside another busy process a step takes 1.4-3 s instead of 0.15 s",
    ),
});

export const generateParamsSchema = z.strictObject({
  ...promptFields,
  n: count.default(1).describe("samples per prompt; `responses[i * n + j]` is sample `j` of prompt `i`"),
  max_new_tokens: count
    .optional()
    .describe(
      "default: with `allowed` on every prompt, the longest completion + 1, else 32 (both capped by the context); an explicit value that does not fit the context is an `InvalidRequest`",
    ),
  temperature,
  top_p: z.number().gt(0).max(1).default(1).describe("nucleus sampling, in (0, 1]"),
  greedy: z.boolean().default(false).describe("argmax"),
  stop: z
    .array(z.string().min(1))
    .default([])
    .describe("stop strings: the sample ends at the token that completes one; `text` is cut before it, `response_ids` keep every sampled token"),
  seed: int.nonnegative().optional().describe("a generator for this request only (reproducible); otherwise the engine's generator advances"),
  ...allowedFields,
});

export const logprobsParamsSchema = z.strictObject({
  ...promptFields,
  responses: z.array(z.string()).optional().describe("one per prompt, encoded without special tokens; exactly one of `responses` / `response_ids`"),
  response_ids: z.array(tokenIds).optional().describe("one token-id array per prompt"),
  append_eos: z.boolean().default(false).describe('score "the response, then end"'),
  temperature,
  micro_batch_size: count.default(256).describe("rows per forward"),
  model: z.enum(["policy", "reference"]).default("policy").describe("`reference` needs `kl_coef > 0` at init"),
  ...allowedFields,
});

export const updateSampleSchema = z.strictObject({
  prompt_ids: tokenIds.min(1).describe("the prompt's token ids"),
  response_ids: tokenIds.min(1).describe("the trained response's token ids"),
  advantages: z.union([z.number(), z.array(z.number())]).describe("one number broadcast to every token, or one per token"),
  old_logprobs: z
    .array(z.number())
    .optional()
    .describe("behaviour log-probs per token (from `generate`); omitted = the current policy's (ratio 1 in the first epoch)"),
  mask: z
    .array(z.union([z.literal(0), z.literal(1)]))
    .optional()
    .describe("per token: 1 = train, 0 = context only (e.g. environment text inside a multi-turn response)"),
  allowed: allowedSetSchema.optional().describe("overrides the request's `allowed` for this sample"),
});

/** update's training knobs (everything but the samples and their allowed sets); the train config takes its PPO fields from these. */
export const updateKnobs = {
  clip_ratio: z.number().min(0).max(1).default(0.2).describe("epsilon; `clip_ratio_low` / `clip_ratio_high` set the two sides separately (clip-higher)"),
  clip_ratio_low: z.number().min(0).max(1).optional().describe("default: `clip_ratio`"),
  clip_ratio_high: z.number().min(0).optional().describe("default: `clip_ratio`"),
  clip_ratio_c: z
    .number()
    .gt(1)
    .default(3)
    .describe(
      "dual-clip bound c: where A < 0 the loss is at most -c A, however far the ratio grew (verl's name and default). Without it an explored action the policy gave ~0 probability gets a ratio of e^20 and one sample steers the whole step",
    ),
  kl_coef: z.number().min(0).optional().describe("beta (default: init's `kl_coef`); > 0 needs the reference kept at init"),
  kl_estimator: klEstimatorSchema
    .default("k3")
    .describe("`k1` = log pi − log pi_ref; `k2` = ½(log pi − log pi_ref)²; `k3` = r − 1 − log r with r = pi_ref / pi (Schulman 2020)"),
  entropy_coef: z.number().default(0).describe("entropy bonus"),
  loss_agg_mode: z.enum(["token-mean", "seq-mean-token-mean"]).default("token-mean").describe("see below"),
  epochs: count.default(1).describe("passes over the samples (reshuffled each time)"),
  minibatch_size: count.optional().describe("samples per optimizer step (default: all samples)"),
  micro_batch_size: count.optional().describe("samples per forward/backward (default: the minibatch; gradient accumulation, same step as one big batch)"),
  max_grad_norm: z.number().min(0).default(1).describe("clip the global gradient norm; `0` = no clipping"),
  temperature,
  lr: z.number().min(0).optional().describe("sets the learning rate from now on (schedules live in the caller)"),
};

export const updateParamsSchema = z.strictObject({
  samples: z.array(updateSampleSchema).min(1).describe("the PPO batch"),
  ...updateKnobs,
  allowed: allowedSetSchema.optional().describe("default `allowed` set of every sample"),
});

const noParams = z.strictObject({});

/** Every command's params: the input of scripts/gen-engine-protocol.ts. */
export const requestParamsSchemas = {
  ping: noParams,
  info: noParams,
  init: initParamsSchema,
  generate: generateParamsSchema,
  logprobs: logprobsParamsSchema,
  update: updateParamsSchema,
  save: z.strictObject({ path: z.string().describe("checkpoint directory") }),
  load: z.strictObject({
    path: z.string().describe("checkpoint directory"),
    device: device.optional().describe("overrides the saved device"),
    threads: count.optional().describe("overrides the saved thread count"),
  }),
  export_onnx: z.strictObject({
    path: z
      .string()
      .regex(/\.onnx$/)
      .describe("the `.onnx` file to write"),
    verify: z.boolean().default(true).describe("run the file in onnxruntime and return `max_abs_diff` against torch"),
  }),
  shutdown: noParams,
} as const satisfies Record<EngineCommand, z.ZodType>;

export type Prompt = z.input<typeof promptSchema>;

type PromptInput = { prompts: Prompt[]; prompt_ids?: never } | { prompt_ids: number[][]; prompts?: never };

type InitInput = z.input<typeof initParamsSchema>;
/** `lora: null` = no adapter (the engine reads a null field as absent). */
export type InitParams = Omit<InitInput, "lora"> & { lora?: InitInput["lora"] | null };
export type GenerateParams = PromptInput & Omit<z.input<typeof generateParamsSchema>, "prompts" | "prompt_ids">;
export type LogprobsParams = PromptInput &
  ({ responses: string[]; response_ids?: never } | { response_ids: number[][]; responses?: never }) &
  Omit<z.input<typeof logprobsParamsSchema>, "prompts" | "prompt_ids" | "responses" | "response_ids">;
export type UpdateSample = z.input<typeof updateSampleSchema>;
export type UpdateParams = z.input<typeof updateParamsSchema>;

export type EngineParams = { [C in Exclude<EngineCommand, "init">]: z.input<(typeof requestParamsSchemas)[C]> } & {
  init: InitParams;
  generate: GenerateParams;
  logprobs: LogprobsParams;
};
