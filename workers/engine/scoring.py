"""Scoring: log pi of given response tokens (used by logprobs, and by update for old, reference
and current log-probs).

``prepare`` lays (prompt, response) pairs out once per command as padded tensors; ``score``
runs the model on some of those samples and returns log pi of their kept response tokens.
"""

from __future__ import annotations

import numpy as np
import torch

from .backends import Backend, ScoreBatch
from .errors import InvalidRequest
from .inputs import automaton
from .model import positions_from_mask
from .sampling import CompletionSet, policy_entropy, policy_logprobs


def prepare(
    b: Backend,
    prompts: list[list[int]],
    responses: list[list[int]],
    sets: list[CompletionSet],
    token_masks: list[list[int] | None] | None = None,
    drop_forced: bool = False,
) -> ScoreBatch:
    """Right-pad prompt + response into tensors; the per-sample Python here is data layout
    (numpy slices), the model never sees a per-sample loop."""
    dev = b.device
    S = len(prompts)
    # samples that share a prompt (GRPO's G rollouts of one task) share one prompt forward
    group_of: dict[tuple, int] = {}
    groups = np.array([group_of.setdefault(tuple(x), len(group_of)) for x in prompts], dtype=np.int64)
    uniq = [list(k) for k in group_of]
    Tu = max(len(x) for x in uniq)
    u_ids = np.full((len(uniq), Tu), b.tokenizer.pad_id, dtype=np.int64)  # left-padded
    u_mask = np.zeros((len(uniq), Tu), dtype=np.int64)
    for i, x in enumerate(uniq):
        u_ids[i, Tu - len(x) :] = x
        u_mask[i, Tu - len(x) :] = 1
    lp = np.array([len(x) for x in prompts], dtype=np.int64)
    lr = np.array([len(x) for x in responses], dtype=np.int64)
    total = lp + lr
    T, Lr = int(total.max()), max(int(lr.max()), 1)
    ctx = b.context_length
    if ctx is not None and T > ctx:
        raise InvalidRequest(f"params: a prompt + response of {T} tokens exceeds the context length ({ctx})")
    ids = np.full((S, T), b.tokenizer.pad_id, dtype=np.int64)
    mask = np.zeros((S, T), dtype=np.int64)
    resp = np.full((S, Lr), b.tokenizer.pad_id, dtype=np.int64)
    keep = np.zeros((S, Lr), dtype=bool)
    for i in range(S):
        ids[i, : lp[i]] = prompts[i]
        ids[i, lp[i] : total[i]] = responses[i]
        mask[i, : total[i]] = 1
        resp[i, : lr[i]] = responses[i]
        unmasked = token_masks is None or token_masks[i] is None
        keep[i, : lr[i]] = True if unmasked else np.asarray(token_masks[i], bool)
    t_ids = torch.from_numpy(ids).to(dev)
    t_mask = torch.from_numpy(mask).to(dev)
    t_resp = torch.from_numpy(resp).to(dev)
    t_lr = torch.from_numpy(lr).to(dev)
    auto = automaton(b, sets)
    t_keep = torch.from_numpy(keep).to(dev)
    if auto.restricted:
        states, ok = auto.walk(t_resp, t_lr)  # (S, Lr) each
        if drop_forced:  # a token that was the only allowed choice: log pi = 0, no gradient
            t_keep &= auto.allowed_table.sum(-1)[states] != 1
    else:
        states, ok = None, torch.ones(S, Lr, dtype=torch.bool, device=dev)
    return ScoreBatch(
        ids=t_ids,
        key_mask=t_mask,
        positions=positions_from_mask(t_mask),
        total_len=torch.from_numpy(total).to(dev),
        prompt_len=torch.from_numpy(lp).to(dev),
        resp=t_resp,
        resp_len=t_lr,
        keep=t_keep,
        states=states,
        ok=ok,
        auto=auto,
        prompt_group=torch.from_numpy(groups).to(dev),
        group_ids=torch.from_numpy(u_ids).to(dev),
        group_mask=torch.from_numpy(u_mask).to(dev),
    )


def score(
    b: Backend,
    prep: ScoreBatch,
    idx: torch.Tensor,
    temperature: float,
    reference: bool = False,
    with_entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """log pi of the kept response tokens of samples ``idx``.

    Returns logp (N,), entropy (N,) or None, and (r, c): each token's row in ``idx`` and
    column in the response, in row-major order (tokens of a sample are contiguous).
    """
    r, c = prep.keep[idx].nonzero(as_tuple=True)  # (N,), (N,)
    sel = b.response_logits(prep, idx, r, c, reference=reference)  # (N, V)
    mask = prep.auto.allowed_table[prep.states[idx][r, c]] if prep.states is not None else None  # (N, V)
    logp_all = policy_logprobs(sel, temperature, mask)  # (N, V) log pi
    targets = prep.resp[idx][r, c]  # (N,)
    logp = logp_all.gather(1, targets.unsqueeze(1)).squeeze(1)  # (N,)
    ent = policy_entropy(logp_all) if with_entropy else None  # (N,)
    return logp, ent, r, c


def score_all(
    b: Backend, prep: ScoreBatch, temperature: float, micro: int, reference: bool = False, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs of every kept token, as a padded (S, Lr) tensor (no grad), and with
    ``with_entropy`` the entropy of pi at each of them (S, Lr), else None."""
    S, Lr = prep.resp.shape
    out = torch.zeros(S, Lr, dtype=torch.float32, device=prep.resp.device)
    ent_out = torch.zeros(S, Lr, dtype=torch.float32, device=prep.resp.device) if with_entropy else None
    with torch.no_grad():
        for idx in torch.arange(S, device=prep.resp.device).split(micro):
            logp, ent, r, c = score(b, prep, idx, temperature, reference=reference, with_entropy=with_entropy)
            out[idx[r], c] = logp
            if ent_out is not None:
                ent_out[idx[r], c] = ent
    return out, ent_out
