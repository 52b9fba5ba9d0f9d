"""update: read the samples, lay them out, get pi_old and pi_ref log-probs, then PPO (ppo.py)."""

from __future__ import annotations

import time

import numpy as np
import torch

from ..errors import InvalidRequest
from ..inputs import check_ids, read_completion_set
from ..ppo import batch_sizes, ppo_update, resolved
from ..protocol import check_float_list
from ..protocol_types import UpdateMetrics, UpdateParams, UpdateResult
from ..scoring import prepare, score_all
from ..state import EngineState


def run(state: EngineState, q: UpdateParams) -> UpdateResult:
    b = state.require()
    t_start = time.perf_counter()
    cfg = resolved(q, state.cfg.kl_coef)  # the schema has checked types, ranges and choices
    default_allowed = read_completion_set(b, q.allowed, "params.allowed")
    if cfg.kl_coef > 0 and not b.has_reference:
        raise InvalidRequest(
            "params.kl_coef: > 0 needs the frozen reference, which init keeps only when its kl_coef > 0"
        )

    # Per sample, what the schema cannot say: ids inside the vocabulary, and one old log-prob,
    # advantage and mask entry per response token.
    prompts, responses, olds, advs, masks, sets = [], [], [], [], [], []
    for i, sample in enumerate(q.samples):
        where = f"params.samples[{i}]"
        prompts.append(check_ids(b, sample.prompt_ids, f"{where}.prompt_ids"))
        resp = check_ids(b, sample.response_ids, f"{where}.response_ids")
        responses.append(resp)
        n = len(resp)
        old = sample.old_logprobs
        olds.append(None if old is None else check_float_list(old, f"{where}.old_logprobs", n))
        adv = sample.advantages
        if isinstance(adv, list):
            advs.append(check_float_list(adv, f"{where}.advantages", n))
        else:  # one advantage for every token
            advs.append(check_float_list([adv], f"{where}.advantages") * n)
        m = sample.mask
        if m is not None and len(m) != n:
            raise InvalidRequest(f"{where}.mask: expected {n} entries (one per response token)")
        masks.append(m)
        sets.append(
            default_allowed if sample.allowed is None else read_completion_set(b, sample.allowed, f"{where}.allowed")
        )
    S = len(prompts)
    if q.lr is not None:
        for g in state.optimizer.param_groups:
            g["lr"] = q.lr

    batch = prepare(b, prompts, responses, sets, masks, drop_forced=True)
    bad = (~batch.ok) & batch.keep
    if bool(bad.any()):
        i = int(bad.any(1).nonzero()[0])
        raise InvalidRequest(f"params.samples[{i}].response_ids: a token is outside the sample's allowed completions")
    _, micro = batch_sizes(cfg, S)
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
        cur, _ = score_all(b, batch, cfg.temperature, micro)
        rows = torch.tensor(missing_old, device=b.device)
        old_logp[rows] = cur[rows]
    ref_logp = score_all(b, batch, cfg.temperature, micro, reference=True)[0] if cfg.kl_coef > 0 else None

    mean, n_steps = ppo_update(b, state.optimizer, state.shuffle_gen, batch, old_logp, advantages, ref_logp, cfg)
    state.update_steps += n_steps
    metrics = UpdateMetrics(
        {
            "losses/loss": mean.get("loss"),
            "losses/pg_loss": mean.get("pg_loss"),
            "losses/kl": mean.get("kl") if cfg.kl_coef > 0 else None,
            "losses/entropy": mean.get("entropy"),
            "losses/clip_frac": mean.get("clip_frac"),
            "losses/dual_clip_frac": mean.get("dual_clip_frac"),
            "losses/approx_kl": mean.get("approx_kl"),
            "losses/grad_norm": mean.get("grad_norm"),
            "perf/num_tokens": int(batch.keep.sum()),
            "perf/num_samples": S,
            "perf/optimizer_steps": n_steps,
            "perf/update_seconds": time.perf_counter() - t_start,
            "perf/lr": state.optimizer.param_groups[0]["lr"],
        }
    )
    return UpdateResult(metrics=metrics, update_steps=state.update_steps)
