"use client";
// A turn's response, tinted on the shared diverging scale. A turn that stored its policy tokens is
// drawn token by token (the real token ids and texts), tinted by advantage, log-prob or entropy,
// every value on hover. A turn without them is split into display words that all carry the turn's
// advantage; the trajectory browser says which of the two the run has (tokenNote).
import { divergingColor, textOn, type Theme } from "@/lib/charts/diverging";
import { displayTokens, tokenCells, type TokenTint } from "@/lib/charts/tokenize";
import { fmtSigned } from "@/lib/charts/format";
import type { TokenData } from "@/lib/schemas/rollouts";

const chip = "rounded-sm px-px";

export function TokenView({
  text,
  tokens,
  advantage,
  tint,
  max,
  theme,
  label,
}: {
  text: string;
  tokens: TokenData | null;
  advantage: number | null;
  tint: TokenTint;
  /** half-width of the scale for this tint */
  max: number;
  theme: Theme;
  /** what the turn's advantage is ("advantage", "under gigpo") */
  label: string;
}) {
  const paint = (v: number | null) => ({ background: divergingColor(v, max, theme) ?? undefined, color: v === null ? undefined : textOn(v, max, theme) });
  return (
    <p
      className="whitespace-pre-wrap break-words rounded bg-zinc-50 p-2 font-mono text-xs leading-6 dark:bg-zinc-950"
      data-testid="token-view"
      data-kind={tokens ? "policy-tokens" : "display-words"}
    >
      {tokens
        ? tokenCells(tokens, tint, advantage, label).map((c, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: policy tokens of one turn, in order: the position is the token
            <span key={i} className={`${chip} border-r border-zinc-300/60 dark:border-zinc-700/60`} title={c.title} data-token-id={c.id} style={paint(c.value)}>
              {c.text}
            </span>
          ))
        : displayTokens(text).map((t, i) =>
            t.space ? (
              // biome-ignore lint/suspicious/noArrayIndexKey: tokens of one turn's text, in order: the position is the token
              <span key={i}>{t.text}</span>
            ) : (
              // biome-ignore lint/suspicious/noArrayIndexKey: tokens of one turn's text, in order: the position is the token
              <span key={i} className={chip} title={`${label}: ${fmtSigned(advantage)}`} style={paint(advantage)}>
                {t.text}
              </span>
            ),
          )}
    </p>
  );
}

/** What the token view shows for this trajectory, said once above its turns. */
export function tokenNote(stored: boolean): string {
  return stored
    ? "Policy tokens as stored with the run (token ids, their texts, sampling log-probs; entropies and per-token advantages where the trainer sent them). Hover a token for its values."
    : "This run stored no token data: actions are split into display words at spaces and punctuation (not the policy's tokens), and every word carries its turn's advantage.";
}
