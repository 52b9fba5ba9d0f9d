// Tokens for the token view. A turn that stored its policy tokens (Turn.tokens: ids, texts,
// log-probs, entropies, advantages) is drawn token by token (tokenCells). A turn without them is
// split into display words, punctuation marks and whitespace runs: these are NOT the policy's
// tokens (the UI says so). Joining the pieces gives back the text exactly.
import type { TokenData } from "../schemas/rollouts";
import { symmetricMax } from "./diverging";
import { fmtSigned } from "./format";

export interface DisplayToken {
  text: string;
  /** whitespace runs are kept (so the text reads as written) but not tinted */
  space: boolean;
}

const PIECE = /\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;

export function displayTokens(text: string): DisplayToken[] {
  const out: DisplayToken[] = [];
  for (const m of text.matchAll(PIECE)) out.push({ text: m[0], space: /^\s+$/u.test(m[0]) });
  return out;
}

export type TokenTint = "advantage" | "logprob" | "entropy";
export const TOKEN_TINTS: readonly TokenTint[] = ["advantage", "logprob", "entropy"];

/** One stored policy token as the token view draws it. */
export interface TokenCell {
  /** the token's text; "#id" when the writer stored no texts, "⟨id⟩" for an empty text */
  text: string;
  id: number;
  /** the tint value on the diverging scale (null: untinted) */
  value: number | null;
  /** hover text: id, text and every stored value */
  title: string;
}

/**
 * The policy's tokens of one turn, tinted by `tint`: advantage (the token's own, else the turn's
 * `advantage`), log-prob (negative: improbable tokens go red) or entropy (positive: uncertain
 * tokens go blue), on the app's one diverging scale.
 */
export function tokenCells(t: TokenData, tint: TokenTint, advantage: number | null, advantageLabel = "advantage"): TokenCell[] {
  return t.ids.map((id, i) => {
    const raw = t.texts?.[i];
    const text = raw === undefined ? `#${id}` : raw === "" ? `⟨${id}⟩` : raw;
    const lp = t.logprobs?.[i] ?? null;
    const ent = t.entropies?.[i] ?? null;
    const adv = t.advantages?.[i] ?? advantage;
    const value = tint === "logprob" ? lp : tint === "entropy" ? ent : adv;
    const parts = [`token ${id}${raw !== undefined ? ` ${JSON.stringify(raw)}` : ""}`];
    if (lp !== null) parts.push(`log-prob ${fmtSigned(lp)} (p ${Math.exp(lp).toPrecision(3)})`);
    if (ent !== null) parts.push(`entropy ${ent.toFixed(3)}`);
    if (adv !== null) parts.push(`${t.advantages ? "advantage" : advantageLabel} ${fmtSigned(adv)}`);
    return { text, id, value, title: parts.join(" · ") };
  });
}

/** Half-width of the tint scale over a trajectory's stored tokens (1 when there is nothing to scale). */
export function tokenTintMax(turns: { tokens: TokenData | null; advantage: number | null }[], tint: Exclude<TokenTint, "advantage">): number {
  const vals: number[] = [];
  for (const u of turns) for (const v of (tint === "logprob" ? u.tokens?.logprobs : u.tokens?.entropies) ?? []) vals.push(v);
  return symmetricMax(vals);
}
