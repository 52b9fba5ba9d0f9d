"""PPO-clip, read top to bottom: the per-token KL estimators and loss weights, the loss of one
micro-batch, then one ``update``: epochs over shuffled minibatches, gradients accumulated over
micro-batches, one clipped AdamW step per minibatch. Equations sit beside the lines computing them.

Every per-token quantity is a flat tensor over the N response tokens of a micro-batch, with
``weights`` (N,) saying how much each token counts in its minibatch: the aggregation mode only
changes the weights, so micro-batches add up exactly to their minibatch.

References:
* PPO-clip: Schulman et al. 2017, "Proximal Policy Optimization Algorithms", Eq. 7 and Eq. 9.
* KL estimators k1/k2/k3: J. Schulman, "Approximating KL Divergence" (2020 blog post).
* The KL penalty in the loss (not in the reward): GRPO, Shao et al. 2024 (DeepSeekMath).
* Asymmetric clip range (clip-higher): DAPO, Yu et al. 2025.
* Dual clip for negative advantages: Ye et al. 2019, "Mastering Complex Control in MOBA Games with
  Deep Reinforcement Learning" (arXiv:1912.09729), Eq. 5; verl's ``clip_ratio_c``.
* Aggregation modes: named as in verl.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, get_args

import torch

from .backends import Backend, ScoreBatch
from .inputs import read_temperature
from .protocol_types import UpdateLossAggMode, UpdateParams
from .scoring import score

# ---------------------------------------------------------------------------------------------
# KL estimators of KL(pi || pi_ref) from samples x ~ pi: a registry filled by a decorator
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
    """k1 = log pi(x) - log pi_ref(x): unbiased, high variance, can be < 0."""
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
# Aggregation: how much each token counts in its minibatch's loss
# ---------------------------------------------------------------------------------------------

AGG_MODES = get_args(UpdateLossAggMode)  # the protocol's loss_agg_mode choices


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
# Configuration: update's params as the protocol defines them (the generated UpdateParams, which
# hold the defaults), with the knobs whose default is another field resolved
# ---------------------------------------------------------------------------------------------


def resolved(q: UpdateParams, init_kl_coef: float) -> UpdateParams:
    """``q`` as the loss reads it: each clip side set (``clip_ratio`` where not given), ``kl_coef``
    set (init's where not given), the temperature > 0 (greedy's 0 scores at T = 1)."""

    def given(v: float | None, default: float) -> float:
        return default if v is None else v

    return dataclasses.replace(
        q,
        clip_ratio_low=given(q.clip_ratio_low, q.clip_ratio),
        clip_ratio_high=given(q.clip_ratio_high, q.clip_ratio),
        kl_coef=given(q.kl_coef, init_kl_coef),
        temperature=read_temperature(q.temperature)[0],
    )


def batch_sizes(cfg: UpdateParams, num_samples: int) -> tuple[int, int]:
    """(minibatch, micro-batch) sizes in samples: a minibatch is every sample where not given, a
    micro-batch the whole minibatch."""
    minibatch = cfg.minibatch_size or num_samples
    return minibatch, min(cfg.micro_batch_size or minibatch, minibatch)


# ---------------------------------------------------------------------------------------------
# The loss of one micro-batch
# ---------------------------------------------------------------------------------------------

STATS = ("loss", "pg_loss", "kl", "entropy", "clip_frac", "dual_clip_frac", "approx_kl")


def ppo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    cfg: UpdateParams,
    ref_logp: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """PPO-clip loss over N tokens; all inputs (N,) except cfg (``resolved``).

    Returns 0-d tensors named as STATS: loss (differentiable), pg_loss, kl, entropy, clip_frac,
    dual_clip_frac, approx_kl, each aggregated with ``weights`` (so a sum over micro-batches is the
    minibatch value). ``kl`` is 0 when ref_logp is None; ``entropy`` 0 when entropy is None.
    """
    # log r_t = log pi(a_t|s_t) - log pi_old(a_t|s_t), clamped to +-20 before exp as verl does: an
    # explored action pi_old gave ~0 probability would otherwise overflow r_t
    log_ratio = torch.clamp(logp - old_logp, -20.0, 20.0)
    ratio = torch.exp(log_ratio)  # r_t
    pg1 = -advantages * ratio  # -r_t A_t
    pg2 = -advantages * torch.clamp(ratio, 1.0 - cfg.clip_ratio_low, 1.0 + cfg.clip_ratio_high)  # -clip(r_t) A_t
    clipped = torch.maximum(pg1, pg2)  # -L^CLIP_t = -min(r_t A_t, clip(r_t, 1-eps, 1+eps) A_t)   (Eq. 7)
    # Dual clip (Ye et al. 2019, Eq. 5): for A_t < 0 the clip above leaves r_t unbounded from above,
    # so the loss is capped at -c A_t:  -L_t = min(-c A_t, -L^CLIP_t)  where A_t < 0
    pg = torch.where(advantages < 0, torch.minimum(-cfg.clip_ratio_c * advantages, clipped), clipped)
    pg_loss = (weights * pg).sum()
    loss = pg_loss

    zero = pg_loss.new_zeros(())
    kl = zero
    if ref_logp is not None:
        kl = (weights * get_kl_estimator(cfg.kl_estimator)(logp, ref_logp)).sum()  # KL(pi || pi_ref)
        loss = loss + cfg.kl_coef * kl  # L = -L^CLIP + beta KL
    ent = zero
    if entropy is not None:
        ent = (weights * entropy).sum()  # H[pi]
        loss = loss - cfg.entropy_coef * ent  # L = -L^CLIP + beta KL - c_H H[pi]   (Eq. 9, no value term)

    with torch.no_grad():
        clip_frac = (weights * (pg2 > pg1).float()).sum()  # share of tokens where the clip is active
        dual_clip_frac = (weights * (pg < clipped).float()).sum()  # share where the dual clip is
        approx_kl = (weights * ((ratio - 1.0) - log_ratio)).sum()  # k3 estimate of KL(pi_old || pi)
    return {
        "loss": loss,
        "pg_loss": pg_loss.detach(),
        "kl": kl.detach(),
        "entropy": ent.detach(),
        "clip_frac": clip_frac,
        "dual_clip_frac": dual_clip_frac,
        "approx_kl": approx_kl,
    }


# ---------------------------------------------------------------------------------------------
# One update: epochs x shuffled minibatches, one optimizer step per minibatch
# ---------------------------------------------------------------------------------------------


def ppo_update(
    b: Backend,
    optimizer: torch.optim.Optimizer,
    shuffle_gen: torch.Generator,
    batch: ScoreBatch,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    ref_logp: torch.Tensor | None,
    cfg: UpdateParams,
) -> tuple[dict[str, float], int]:
    """Train on ``batch``'s kept response tokens.

    old_logp, advantages, ref_logp: (S, Lr), laid out like batch.resp; ref_logp None: no KL
    term. Returns each statistic of ppo_loss (and grad_norm) averaged over optimizer steps, and
    the number of steps (a minibatch with no trained token takes none).
    """
    S = batch.resp.shape[0]
    minibatch, micro = batch_sizes(cfg, S)
    seq_len = batch.keep.sum(1)  # (S,) trained tokens per sample
    params = b.trainable_parameters()
    max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
    sums: dict[str, float] = {}
    n_steps = 0
    for _epoch in range(cfg.epochs):
        perm = torch.randperm(S, generator=shuffle_gen).to(batch.resp.device)
        for mb in perm.split(minibatch):
            mb_tokens = int(seq_len[mb].sum())
            if mb_tokens == 0:
                continue
            mb_seqs = int((seq_len[mb] > 0).sum())
            optimizer.zero_grad(set_to_none=True)
            stats = dict.fromkeys(STATS, 0.0)
            for idx in mb.split(micro):  # gradients add up: the weights sum to 1 over the minibatch
                if int(seq_len[idx].sum()) == 0:
                    continue
                logp, ent, r, c = score(b, batch, idx, cfg.temperature, with_entropy=True)  # log pi(a_t|s_t), H[pi]
                rows = idx[r]  # each token's sample
                w = token_weights(seq_len[rows], cfg.loss_agg_mode, mb_tokens, mb_seqs)  # (N,)
                out = ppo_loss(
                    logp,
                    old_logp[rows, c],
                    advantages[rows, c],
                    w,
                    cfg,
                    ref_logp=ref_logp[rows, c] if ref_logp is not None else None,
                    entropy=ent if cfg.entropy_coef != 0 else ent.detach(),
                )
                out["loss"].backward()
                for k in stats:
                    stats[k] += float(out[k].detach())
            grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)  # ||g|| before clipping
            optimizer.step()  # theta <- AdamW(theta, g)
            n_steps += 1
            stats["grad_norm"] = float(grad_norm)
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v
    return {k: v / max(n_steps, 1) for k, v in sums.items()}, n_steps
