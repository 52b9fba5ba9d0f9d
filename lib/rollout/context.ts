// What the agent sees each turn: the prompt built from the episode so far under a context strategy.
//   full    — every earlier (observation, action) pair, then the current observation
//   window  — only the last k pairs (k = 0: the current observation alone, a Markov agent)
//   memory  — MEM1-style: a memory the agent rewrites every turn, `<memory>..</memory>`, replaces the history
// (the strategies' schema is lib/schemas/context.ts: a train config carries it)
import type { ContextConfig } from "../schemas/context";

export interface EpisodeContext {
  history: { observation: string; action: string }[];
  memory: string;
}

export const newContext = (): EpisodeContext => ({ history: [], memory: "" });

export interface PromptOptions {
  /** The environment's instructions (system prompt); null leaves them out (tiny models). */
  instructions: string | null;
}

/** The prompt for the current turn. Plain text; the engine's tokenizer or chat template wraps it. */
export function buildPrompt(cfg: ContextConfig, ctx: EpisodeContext, observation: string, opts: PromptOptions): string {
  const parts: string[] = [];
  if (opts.instructions) parts.push(opts.instructions.trim(), "");
  if (cfg.strategy === "memory") {
    parts.push(`Memory: ${ctx.memory || "(empty)"}`);
  } else {
    const past = cfg.strategy === "full" ? ctx.history : cfg.turns === 0 ? [] : ctx.history.slice(-cfg.turns);
    for (const h of past) parts.push(h.observation, `Action: ${h.action}`);
  }
  parts.push(observation, "Action:");
  return parts.join("\n");
}

/** Splits a response into its memory (memory strategy) and the action text handed to the environment. */
export function readResponse(cfg: ContextConfig, text: string): { action: string; memory: string | null } {
  if (cfg.strategy !== "memory") return { action: text.trim(), memory: null };
  const m = text.match(/<memory>([\s\S]*?)<\/memory>/i);
  const memory = m ? m[1].trim().slice(0, cfg.maxChars) : null;
  return { action: (m ? text.replace(m[0], "") : text).trim(), memory };
}

/** Records the turn in the episode context. */
export function advanceContext(cfg: ContextConfig, ctx: EpisodeContext, observation: string, response: string): void {
  const { action, memory } = readResponse(cfg, response);
  ctx.history.push({ observation, action });
  if (memory !== null) ctx.memory = memory;
}
