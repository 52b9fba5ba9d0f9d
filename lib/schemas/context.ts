// The context strategy of a rollout (what the agent sees each turn): part of a train job's config,
// so it is a schema here; lib/rollout/context.ts builds the prompts it describes.
import { z } from "zod";

export const contextSchema = z
  .discriminatedUnion("strategy", [
    z.object({ strategy: z.literal("full") }).strict(),
    z.object({ strategy: z.literal("window"), turns: z.number().int().min(0).max(64).default(2).describe("Earlier turns kept in the prompt.") }).strict(),
    z
      .object({ strategy: z.literal("memory"), maxChars: z.number().int().min(16).max(4096).default(400).describe("Memory is cut to this many characters.") })
      .strict(),
  ])
  .describe("What the agent sees: full history, a sliding window of the last k turns, or a memory it rewrites (MEM1).");
export type ContextConfig = z.infer<typeof contextSchema>;
