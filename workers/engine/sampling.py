"""Restricted sampling (``allowed``), temperature / top-p sampling and per-token log-probs.

The policy distribution the engine reports log-probs for, and trains, is

    pi(v | context) = softmax(logits / T)  restricted to the allowed tokens and renormalised,

where the allowed tokens at each step come from the ``allowed`` completions (below). Top-p
only truncates what is *sampled*; it is not part of pi (as in verl / OpenRLHF), so the
log-probs of ``generate``, ``logprobs`` and ``update`` agree for the same T and ``allowed``.

Allowed completions are compiled into one finite automaton for the whole batch: a dense
next-state table (S, V) with -1 for a forbidden token. State FREE allows every token (an
unrestricted sample), state DONE allows none. A completion set becomes a trie: its root is a
sample's start state; reaching a node with no children finishes the sample; a node that
completes one completion and prefixes another also allows EOS (-> DONE). Stepping every
sample is then one gather, with no per-sample Python in the hot path.
"""

from __future__ import annotations

from typing import Sequence

import torch

FREE, DONE = 0, 1

# One completion set: a list of completions, each a list of token ids (strings are tokenized
# by the caller). None = unrestricted.
CompletionSet = list[list[int]] | None


class AllowedAutomaton:
    def __init__(self, sets: Sequence[CompletionSet], vocab_size: int, eos_id: int | None, device):
        """sets: one CompletionSet per sample (None = unrestricted)."""
        rows: list[dict[int, int]] = [{}, {}]  # FREE's row is special-cased below; DONE is empty
        leaf = [False, True]
        roots: list[int] = []
        cache: dict[tuple, int] = {}  # identical sets share one trie
        for comp_set in sets:
            if comp_set is None:
                roots.append(FREE)
                continue
            key = tuple(sorted(tuple(c) for c in comp_set))
            if key in cache:
                roots.append(cache[key])
                continue
            if not key or any(len(c) == 0 for c in key):
                raise ValueError("allowed: every completion must be non-empty and the set must not be empty")
            root = len(rows)
            rows.append({})
            leaf.append(False)
            terminal: set[int] = set()
            for comp in key:
                node = root
                for tok in comp:
                    if not 0 <= tok < vocab_size:
                        raise ValueError(f"allowed: token id {tok} outside the vocabulary (size {vocab_size})")
                    nxt = rows[node].get(tok)
                    if nxt is None:
                        nxt = len(rows)
                        rows.append({})
                        leaf.append(False)
                        rows[node][tok] = nxt
                    node = nxt
                terminal.add(node)
            for node in terminal:
                if rows[node]:  # completes one completion and prefixes another: EOS decides
                    if eos_id is None:
                        raise ValueError("allowed: a completion is a prefix of another and the tokenizer has no EOS")
                    rows[node][eos_id] = DONE
                else:
                    leaf[node] = True
            cache[key] = root
            roots.append(root)

        S = len(rows)
        table = torch.full((S, vocab_size), -1, dtype=torch.long)
        table[FREE] = FREE
        if eos_id is not None:
            table[FREE, eos_id] = DONE
        for s, row in enumerate(rows):
            if s == FREE or not row:
                continue
            toks = torch.tensor(list(row.keys()), dtype=torch.long)
            table[s, toks] = torch.tensor(list(row.values()), dtype=torch.long)
        self.table = table.to(device)  # (S, V) next state, -1 = forbidden
        self.allowed_table = self.table >= 0  # (S, V)
        self.leaf = torch.tensor(leaf, dtype=torch.bool, device=device)  # (S,)
        self.roots = torch.tensor(roots, dtype=torch.long, device=device)  # (B,)
        self.restricted = any(r != FREE for r in roots)

    def mask(self, state: torch.Tensor) -> torch.Tensor | None:
        """(B,) states -> (B, V) allowed mask, or None when no sample is restricted."""
        if not self.restricted:
            return None
        # a finished sample sits in a leaf state that allows nothing: let it "sample" freely
        # (its token is discarded) rather than softmax over all -inf (NaN)
        return self.allowed_table[state] | self.leaf[state].unsqueeze(-1)

    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Next states (B,); a forbidden token leads to FREE (only possible when scoring)."""
        nxt = self.table[state, tokens]
        return torch.where(nxt >= 0, nxt, torch.full_like(nxt, FREE))

    def walk(self, responses: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """States before each response token and whether each token was allowed.

        responses: (B, L) right-padded token ids; lengths: (B,). Returns states (B, L) and
        ok (B, L) bool (padding positions: True). Loops over L (response length), not B.
        """
        B, L = responses.shape
        states = torch.empty(B, L, dtype=torch.long, device=responses.device)
        ok = torch.ones(B, L, dtype=torch.bool, device=responses.device)
        s = self.roots.clone()
        for t in range(L):
            states[:, t] = s
            tok = responses[:, t]
            valid = t < lengths
            ok[:, t] = ~valid | (self.table[s, tok] >= 0)
            s = torch.where(valid, self.step(s, tok), s)
        return states, ok


def policy_logprobs(logits: torch.Tensor, temperature: float, mask: torch.Tensor | None) -> torch.Tensor:
    """log pi(. | context) over the vocabulary: log_softmax(mask(logits) / T). (..., V) float32."""
    logits = logits.float()
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    return torch.log_softmax(logits / temperature, dim=-1)


def policy_entropy(logp_all: torch.Tensor) -> torch.Tensor:
    """H[pi] = -sum_v pi(v) log pi(v) over the last axis; -inf entries (masked tokens) count 0.

    The -inf entries are zeroed before the product: a where() over p * logp_all would still send
    the gradient through 0 * -inf = NaN in its unselected branch (backward of the product).
    """
    p = logp_all.exp()
    finite = torch.where(p > 0, logp_all, torch.zeros_like(logp_all))
    return -(p * finite).sum(-1)


def sample_tokens(
    logp_all: torch.Tensor, greedy: bool, top_p: float, generator: torch.Generator | None
) -> torch.Tensor:
    """(B, V) log-probs -> (B,) token ids: argmax, or a draw from the top-p nucleus."""
    if greedy:
        return logp_all.argmax(-1)
    probs = logp_all.exp()  # (B, V)
    if top_p < 1.0:
        sorted_p, order = probs.sort(-1, descending=True)  # (B, V)
        # Keep the smallest prefix whose mass reaches top_p (Holtzman et al. 2020): drop a
        # token when the mass before it already reaches top_p; the first token always stays.
        drop = (sorted_p.cumsum(-1) - sorted_p) >= top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
