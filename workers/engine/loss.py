"""PPO-clip policy loss, KL estimators and loss aggregation (pure tensor functions).

Every per-token quantity is a flat tensor over the N response tokens of a (micro)batch, with
``weights`` (N,) saying how much each token counts in the aggregate: the aggregation mode
only changes the weights, so micro-batches add up exactly to their minibatch.

References:
* PPO-clip: Schulman et al. 2017, "Proximal Policy Optimization Algorithms", Eq. 7.
* KL estimators k1/k2/k3: J. Schulman, "Approximating KL Divergence" (2020 blog post).
* Aggregation modes: named as in verl ``core_algos.agg_loss``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .protocol import param_defaults

# ---------------------------------------------------------------------------------------------
# KL estimators: registry filled by a decorator (unknown names list the known ones)
# ---------------------------------------------------------------------------------------------

KLEstimator = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
KL_ESTIMATORS: dict[str, KLEstimator] = {}


def register_kl(name: str):
    def wrap(fn: KLEstimator) -> KLEstimator:
        if name in KL_ESTIMATORS:
            raise ValueError(f"duplicate KL estimator {name!r}")
        KL_ESTIMATORS[name] = fn
        return fn

    return wrap


def get_kl_estimator(name: str) -> KLEstimator:
    if name not in KL_ESTIMATORS:
        raise ValueError(f"unknown KL estimator {name!r} (known: {', '.join(sorted(KL_ESTIMATORS))})")
    return KL_ESTIMATORS[name]


@register_kl("k1")
def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k1 = log pi(x) - log pi_ref(x): unbiased for KL(pi || pi_ref), high variance, can be < 0."""
    return logp - ref_logp


@register_kl("k2")
def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k2 = (log pi(x) - log pi_ref(x))^2 / 2: biased, low variance, >= 0."""
    return 0.5 * (logp - ref_logp) ** 2


@register_kl("k3")
def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 = r - 1 - log r with r = pi_ref(x) / pi(x): unbiased, low variance, >= 0."""
    log_r = ref_logp - logp
    return torch.exp(log_r) - 1.0 - log_r


# ---------------------------------------------------------------------------------------------
# Aggregation
# ---------------------------------------------------------------------------------------------

AGG_MODES = ("token-mean", "seq-mean-token-mean")


def token_weights(
    seq_len: torch.Tensor, mode: str, num_tokens: int | None = None, num_seqs: int | None = None
) -> torch.Tensor:
    """Weights (N,) of the tokens of one minibatch, summing to 1 over the whole minibatch.

    seq_len: (N,) number of trained tokens in the sequence each token belongs to.
    num_tokens / num_seqs: the minibatch totals when these N tokens are one micro-batch of it
    (default: the N tokens are the whole minibatch).
    token-mean:           w_t = 1 / num_tokens               (every token counts the same)
    seq-mean-token-mean:  w_t = 1 / (num_seqs * seq_len_t)   (every sequence counts the same)
    """
    seq_len = seq_len.float()
    if mode == "token-mean":
        n = seq_len.numel() if num_tokens is None else num_tokens
        return torch.full_like(seq_len, 1.0 / max(n, 1))
    if mode == "seq-mean-token-mean":
        # each sequence has seq_len tokens of weight 1/seq_len, so sum(1/seq_len) counts sequences
        s = int(round(float((1.0 / seq_len).sum()))) if num_seqs is None else num_seqs
        return 1.0 / (seq_len * max(s, 1))
    raise ValueError(f"unknown loss_agg_mode {mode!r} (known: {', '.join(AGG_MODES)})")


# ---------------------------------------------------------------------------------------------
# PPO-clip loss
# ---------------------------------------------------------------------------------------------

# update's defaults, from the protocol schema (written once, in workers/engine-client.ts)
_D = param_defaults("update")


@dataclass
class LossConfig:
    clip_ratio_low: float = float(_D["clip_ratio"])
    """epsilon below 1: the ratio is clipped at 1 - clip_ratio_low."""
    clip_ratio_high: float = float(_D["clip_ratio"])
    """epsilon above 1: the ratio is clipped at 1 + clip_ratio_high (DAPO's clip-higher if larger)."""
    kl_coef: float = 0.0
    """beta: weight of the KL(pi || pi_ref) penalty added to the loss (GRPO style, not in the reward)."""
    kl_estimator: str = _D["kl_estimator"]
    """Per-token KL estimator: k1, k2 or k3 (see KL_ESTIMATORS)."""
    entropy_coef: float = float(_D["entropy_coef"])
    """Weight of the entropy bonus (subtracted from the loss)."""
    loss_agg_mode: str = _D["loss_agg_mode"]
    """token-mean or seq-mean-token-mean (see token_weights)."""


def entropy_from_logprobs(logprobs_all: torch.Tensor) -> torch.Tensor:
    """H = -sum_v p(v) log p(v) over the last axis; -inf entries (masked tokens) count 0."""
    p = logprobs_all.exp()
    return -torch.where(p > 0, p * logprobs_all, torch.zeros_like(p)).sum(-1)


def ppo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    cfg: LossConfig,
    ref_logp: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """PPO-clip loss over N tokens; all inputs (N,) except cfg.

    Returns a dict of 0-d tensors: loss (differentiable), pg_loss, kl, entropy, clip_frac,
    approx_kl, each aggregated with ``weights`` (so a sum over micro-batches is the minibatch
    value). ``kl`` is 0 when ref_logp is None; ``entropy`` 0 when entropy is None.
    """
    log_ratio = logp - old_logp  # log r_t = log pi(a_t) - log pi_old(a_t)
    ratio = torch.exp(log_ratio)  # r_t
    pg1 = -advantages * ratio  # -A_t r_t
    pg2 = -advantages * torch.clamp(ratio, 1.0 - cfg.clip_ratio_low, 1.0 + cfg.clip_ratio_high)  # -A_t clip(r_t)
    pg = torch.maximum(pg1, pg2)  # L^CLIP = -min(r A, clip(r) A)   (Schulman et al. 2017, Eq. 7)
    pg_loss = (weights * pg).sum()
    loss = pg_loss

    zero = pg_loss.new_zeros(())
    kl = zero
    if ref_logp is not None:
        kl = (weights * get_kl_estimator(cfg.kl_estimator)(logp, ref_logp)).sum()
        loss = loss + cfg.kl_coef * kl  # L = L^CLIP + beta * KL(pi || pi_ref)
    ent = zero
    if entropy is not None:
        ent = (weights * entropy).sum()
        loss = loss - cfg.entropy_coef * ent  # L = ... - c_H * H[pi]

    with torch.no_grad():
        clip_frac = (weights * (pg2 > pg1).float()).sum()  # share of tokens where the clip is active
        approx_kl = (weights * ((ratio - 1.0) - log_ratio)).sum()  # k3 estimate of KL(pi_old || pi)
    return {
        "loss": loss,
        "pg_loss": pg_loss.detach(),
        "kl": kl.detach(),
        "entropy": ent.detach(),
        "clip_frac": clip_frac,
        "approx_kl": approx_kl,
    }
