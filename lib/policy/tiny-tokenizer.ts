// The engine's tiny tokenizer, in TypeScript, token for token (workers/engine/PROTOCOL.md,
// "Tiny tokenizers"): an exported ONNX policy tokenizes here exactly as it did in training.
import { z } from "zod";

const tokenizerFileSchema = z.object({
  format: z.literal("turnlens-tiny-tokenizer"),
  version: z.literal(1),
  kind: z.enum(["word", "char"]),
  specials: z.object({ pad: z.number().int(), bos: z.number().int(), eos: z.number().int(), unk: z.number().int() }),
  add_bos: z.boolean(),
  vocab: z.array(z.string()).min(4),
});

// Pieces: maximal runs of ASCII letters/digits, every other code point alone (the `u` flag makes
// `.` a code point, as Python's regex does).
const PIECES = /[A-Za-z0-9]+|[^A-Za-z0-9]/gu;

export class TinyTokenizer {
  readonly kind: "word" | "char";
  readonly vocab: string[];
  readonly pad: number;
  readonly bos: number;
  readonly eos: number;
  readonly unk: number;
  private readonly addBos: boolean;
  private readonly index: Map<string, number>;

  constructor(file: unknown) {
    const f = tokenizerFileSchema.parse(file);
    this.kind = f.kind;
    this.vocab = f.vocab;
    ({ pad: this.pad, bos: this.bos, eos: this.eos, unk: this.unk } = f.specials);
    this.addBos = f.add_bos;
    this.index = new Map(f.vocab.map((t, i) => [t, i]));
  }

  /** Text -> ids, no specials (responses and allowed completions). */
  encode(text: string): number[] {
    const ids: number[] = [];
    const chars = (s: string) => {
      for (const ch of s) ids.push(this.index.get(ch) ?? this.unk);
    };
    if (this.kind === "char") chars(text);
    else
      for (const piece of text.match(PIECES) ?? []) {
        const id = this.index.get(piece);
        if (id !== undefined) ids.push(id);
        else chars(piece);
      }
    return ids;
  }

  /** A prompt: <bos> + encode(text). */
  encodePrompt(text: string): number[] {
    return this.addBos ? [this.bos, ...this.encode(text)] : this.encode(text);
  }

  decode(ids: number[]): string {
    return ids
      .filter((i) => i > 3)
      .map((i) => this.vocab[i] ?? "")
      .join("");
  }
}
