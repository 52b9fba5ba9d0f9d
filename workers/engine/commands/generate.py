"""generate: sample n responses per prompt, batched, with a KV cache and optional ``allowed`` sets."""

from __future__ import annotations

import time

import numpy as np
import torch

from ..errors import InvalidRequest
from ..inputs import automaton, read_allowed, read_prompts, read_temperature
from ..model import positions_from_mask
from ..protocol_types import GeneratedResponse, GenerateParams, GenerateResult
from ..sampling import policy_logprobs, sample_tokens
from ..state import EngineState

# Reason codes of generate's finish_reason, in tensor form during the loop (the same names as
# GeneratedResponseFinishReason, the protocol's; a test checks that they agree).
_REASONS = ("length", "eos", "allowed", "stop")


def run(state: EngineState, q: GenerateParams) -> GenerateResult:
    b = state.require()
    t_start = time.perf_counter()
    prompts = read_prompts(b, q.prompts, q.prompt_ids)
    n, max_new, top_p, stop, seed = q.n, q.max_new_tokens, q.top_p, q.stop, q.seed
    temperature, greedy = read_temperature(q.temperature)
    greedy = q.greedy or greedy
    sets = read_allowed(b, q.allowed, q.allowed_per_prompt, len(prompts))

    # n samples per prompt, consecutive: responses[i * n + j] is sample j of prompt i.
    prompt_index = [i for i in range(len(prompts)) for _ in range(n)]
    prompts = [prompts[i] for i in prompt_index]
    sets = [sets[i] for i in prompt_index]
    B = len(prompts)
    if B == 0:
        return GenerateResult(responses=[], metrics={})
    lens = [len(x) for x in prompts]
    Tp = max(lens)
    ctx = b.context_length
    if max_new is None:  # default: enough for the longest allowed completion (+ EOS), else 32
        restricted = [s for s in sets if s is not None]
        max_new = max(len(c) for s in restricted for c in s) + 1 if len(restricted) == B else 32
        if ctx is not None:
            max_new = max(1, min(max_new, ctx - Tp))
    if ctx is not None and Tp + max_new > ctx:
        raise InvalidRequest(
            f"params.max_new_tokens: longest prompt ({Tp} tokens) + max_new_tokens ({max_new}) exceeds the "
            f"model's context length ({ctx})"
        )
    dev = b.device
    tok = b.tokenizer
    pad = tok.pad_id
    eos = tok.eos_id

    # Left-pad the prompts so every row's last prompt token is in the last column.
    ids_np = np.full((B, Tp), pad, dtype=np.int64)
    mask_np = np.zeros((B, Tp), dtype=np.int64)
    for i, x in enumerate(prompts):
        ids_np[i, Tp - len(x) :] = x
        mask_np[i, Tp - len(x) :] = 1
    ids = torch.from_numpy(ids_np).to(dev)  # (B, Tp)
    key_mask = torch.from_numpy(mask_np).to(dev)  # (B, Tp)
    positions = positions_from_mask(key_mask)  # (B, Tp)

    group_of: dict[tuple, int] = {}  # distinct prompts: prefilled once
    inv_l = [group_of.setdefault(tuple(x), len(group_of)) for x in prompts]
    first = {}
    for row, g in enumerate(inv_l):
        first.setdefault(g, row)
    inv = torch.tensor(inv_l, dtype=torch.long, device=dev)  # (B,)
    first_rows = torch.tensor([first[g] for g in range(len(first))], dtype=torch.long, device=dev)  # (u,)

    auto = automaton(b, sets)
    gen = state.gen if seed is None else torch.Generator(device=dev).manual_seed(seed)
    state = auto.roots.clone()  # (B,)
    finished = torch.zeros(B, dtype=torch.bool, device=dev)
    reason = torch.zeros(B, dtype=torch.long, device=dev)  # index into _REASONS
    out_tok = torch.full((B, max_new), pad, dtype=torch.long, device=dev)
    out_lp = torch.zeros(B, max_new, dtype=torch.float32, device=dev)
    out_ent = torch.zeros(B, max_new, dtype=torch.float32, device=dev)  # entropy of pi at each token
    out_len = torch.zeros(B, dtype=torch.long, device=dev)
    key_masks = [key_mask]
    next_pos = positions[:, -1] + 1  # (B,)
    stop_at: dict[int, int] = {}  # sample -> character index where its text is cut

    with torch.no_grad():
        cache = b.new_cache(B, Tp + max_new)
        logits = b.prefill(ids, key_mask, positions, cache, first_rows, inv)  # (B, V)
        for t in range(max_new):
            logp_all = policy_logprobs(logits, temperature, auto.mask(state))  # (B, V) log pi
            new = sample_tokens(logp_all, greedy, top_p, gen)  # (B,)
            active = ~finished
            new = torch.where(active, new, torch.full_like(new, pad))
            out_tok[:, t] = new
            out_lp[:, t] = logp_all.gather(1, new.unsqueeze(1)).squeeze(1)
            # H(pi) = -sum p log p; entr() is 0 at p = 0, so masked (-inf) tokens add nothing
            out_ent[:, t] = torch.special.entr(logp_all.exp()).sum(-1)
            out_len += active.long()
            state = torch.where(active, auto.step(state, new), state)
            done_eos = active & (new == eos) if eos is not None else torch.zeros_like(active)
            done_leaf = active & auto.leaf[state] & ~done_eos
            reason = torch.where(done_eos, torch.full_like(reason, 1), reason)
            reason = torch.where(done_leaf, torch.full_like(reason, 2), reason)
            finished = finished | done_eos | done_leaf
            if stop:  # stop strings need the text: per-sample, only when asked for
                rows = (active & ~finished).nonzero().flatten().tolist()
                if rows:
                    toks = out_tok[rows, : t + 1].tolist()
                    for r, seq in zip(rows, toks):
                        text = tok.decode(seq)
                        cut = min((text.find(s) for s in stop if s in text), default=-1)
                        if cut >= 0:
                            stop_at[r] = cut
                            finished[r] = True
                            reason[r] = 3
            if bool(finished.all()) or t == max_new - 1:
                break
            key_masks.append(torch.ones(B, 1, dtype=torch.long, device=dev))
            logits = b.forward_cached(new.unsqueeze(1), torch.cat(key_masks, dim=1), next_pos.unsqueeze(1), cache)[
                :, -1
            ]  # (B, V)
            next_pos = next_pos + 1

    toks = out_tok.cpu().tolist()
    lps = out_lp.cpu().tolist()
    ents = out_ent.cpu().tolist()
    lengths = out_len.cpu().tolist()
    reasons = reason.cpu().tolist()
    responses = []
    n_tokens = 0
    for i in range(B):
        r_ids = toks[i][: lengths[i]]
        n_tokens += len(r_ids)
        text = tok.decode(r_ids)
        if i in stop_at:
            text = text[: stop_at[i]]
        responses.append(
            GeneratedResponse(
                prompt_index=prompt_index[i],
                prompt_ids=prompts[i],
                response_ids=r_ids,
                logprobs=lps[i][: lengths[i]],
                entropies=ents[i][: lengths[i]],
                token_texts=tok.token_texts(r_ids),
                text=text,
                finish_reason=_REASONS[reasons[i]],
            )
        )
    secs = time.perf_counter() - t_start
    return GenerateResult(
        responses=responses,
        metrics={
            "perf/generate_seconds": secs,
            "perf/new_tokens": n_tokens,
            "perf/tokens_per_second": n_tokens / secs if secs > 0 else None,
        },
    )
