"""update: read the samples, lay them out, get pi_old and pi_ref log-probs, then PPO (ppo.py)."""

from __future__ import annotations

import time

import numpy as np
import torch

from ..errors import InvalidRequest
from ..inputs import check_ids, read_completion_set, read_temperature
from ..ppo import AGG_MODES, KL_ESTIMATORS, PPOConfig, ppo_update
from ..protocol import Params, check_float_list, check_int_list
from ..scoring import prepare, score_all
from ..state import EngineState


def read_config(p: Params, state: EngineState) -> tuple[PPOConfig, float | None]:
    """The PPO arguments of the request (the schema has checked types and ranges already), and
    the learning rate to set (None: keep the optimizer's)."""
    d = PPOConfig()
    clip = p.float("clip_ratio", d.clip_ratio_low, min=0.0)
    cfg = PPOConfig(
        clip_ratio_low=p.float("clip_ratio_low", clip, min=0.0, max=1.0),
        clip_ratio_high=p.float("clip_ratio_high", clip, min=0.0),
        kl_coef=p.float("kl_coef", state.cfg.kl_coef, min=0.0),
        kl_estimator=p.str("kl_estimator", d.kl_estimator, choices=tuple(sorted(KL_ESTIMATORS))),
        entropy_coef=p.float("entropy_coef", d.entropy_coef),
        loss_agg_mode=p.str("loss_agg_mode", d.loss_agg_mode, choices=AGG_MODES),
        epochs=p.int("epochs", d.epochs, min=1),
        minibatch_size=p.int("minibatch_size", None, min=1),
        micro_batch_size=p.int("micro_batch_size", None, min=1),
        max_grad_norm=p.float("max_grad_norm", d.max_grad_norm, min=0.0),
        temperature=read_temperature(p)[0],
    )
    return cfg, p.float("lr", None, min=0.0)


def run(state: EngineState, p: Params) -> dict:
    b = state.require()
    t_start = time.perf_counter()
    cfg, lr = read_config(p, state)
    default_allowed = read_completion_set(b, p.raw("allowed", None), "params.allowed")
    raw_samples = p.list("samples")
    p.finish()
    if cfg.kl_coef > 0 and not b.has_reference:
        raise InvalidRequest(
            "params.kl_coef: > 0 needs the frozen reference, which init keeps only when its kl_coef > 0"
        )

    prompts, responses, olds, advs, masks, sets = [], [], [], [], [], []
    for i, raw in enumerate(raw_samples):
        where = f"params.samples[{i}]"
        sp = Params(raw, where)
        prompts.append(check_ids(b, sp.raw("prompt_ids"), f"{where}.prompt_ids", nonempty=True))
        resp = check_ids(b, sp.raw("response_ids"), f"{where}.response_ids", nonempty=True)
        responses.append(resp)
        n = len(resp)
        old = sp.raw("old_logprobs", None)
        olds.append(None if old is None else check_float_list(old, f"{where}.old_logprobs", n))
        if not sp.has("advantages"):
            raise InvalidRequest(f"{where}.advantages: required (a number or one per token)")
        adv = sp.raw("advantages")
        if isinstance(adv, (int, float)) and not isinstance(adv, bool):  # one advantage for every token
            advs.append([float(check_float_list([adv], f"{where}.advantages")[0])] * n)
        else:
            advs.append(check_float_list(adv, f"{where}.advantages", n))
        m = sp.raw("mask", None)
        if m is not None:
            m = check_int_list(m, f"{where}.mask", lo=0, hi=2)
            if len(m) != n:
                raise InvalidRequest(f"{where}.mask: expected {n} entries (one per response token)")
        masks.append(m)
        sets.append(
            read_completion_set(b, sp.raw("allowed"), f"{where}.allowed") if sp.has("allowed") else default_allowed
        )
        sp.finish()
    S = len(prompts)
    if S == 0:
        raise InvalidRequest("params.samples: must not be empty")
    if lr is not None:
        for g in state.optimizer.param_groups:
            g["lr"] = lr

    batch = prepare(b, prompts, responses, sets, masks, drop_forced=True)
    bad = (~batch.ok) & batch.keep
    if bool(bad.any()):
        i = int(bad.any(1).nonzero()[0])
        raise InvalidRequest(f"params.samples[{i}].response_ids: a token is outside the sample's allowed completions")
    _, micro = cfg.batch_sizes(S)
    Lr = batch.resp.shape[1]

    def pad_rows(rows: list[list[float] | None]) -> torch.Tensor:
        out = np.zeros((S, Lr), dtype=np.float32)
        for i, row in enumerate(rows):
            if row is not None:
                out[i, : len(row)] = row
        return torch.from_numpy(out).to(b.device)

    advantages = pad_rows(advs)  # (S, Lr) A_t
    old_logp = pad_rows(olds)  # (S, Lr) log pi_old(a_t|s_t), the behaviour policy's
    missing_old = [i for i, o in enumerate(olds) if o is None]
    if missing_old:  # not given: the current policy's (ratio 1 at the first step)
        cur = score_all(b, batch, cfg.temperature, micro)
        rows = torch.tensor(missing_old, device=b.device)
        old_logp[rows] = cur[rows]
    ref_logp = score_all(b, batch, cfg.temperature, micro, reference=True) if cfg.kl_coef > 0 else None

    mean, n_steps = ppo_update(b, state.optimizer, state.shuffle_gen, batch, old_logp, advantages, ref_logp, cfg)
    state.update_steps += n_steps
    metrics = {
        "losses/loss": mean.get("loss"),
        "losses/pg_loss": mean.get("pg_loss"),
        "losses/kl": mean.get("kl") if cfg.kl_coef > 0 else None,
        "losses/entropy": mean.get("entropy"),
        "losses/clip_frac": mean.get("clip_frac"),
        "losses/approx_kl": mean.get("approx_kl"),
        "losses/grad_norm": mean.get("grad_norm"),
        "perf/num_tokens": int(batch.keep.sum()),
        "perf/num_samples": S,
        "perf/optimizer_steps": n_steps,
        "perf/update_seconds": time.perf_counter() - t_start,
        "perf/lr": state.optimizer.param_groups[0]["lr"],
    }
    return {"metrics": metrics, "update_steps": state.update_steps}
