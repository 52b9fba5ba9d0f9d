"""update: PPO-clip over minibatches and epochs, then AdamW steps (UpdateArgs holds its arguments)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from .. import loss as L
from ..protocol import InvalidRequest, Params, check_float_list, check_int_list, param_defaults

if TYPE_CHECKING:
    from ..engine import Engine


# The defaults come from the protocol schema, generated from the TypeScript client's zod schemas:
# written once there, read here, shown in PROTOCOL.md's table.
_D = param_defaults("update")


@dataclass
class UpdateArgs:
    """The PPO arguments of one update. None = a default that depends on the engine or the batch."""

    clip_ratio: float = float(_D["clip_ratio"])
    clip_ratio_low: float | None = None
    """None: clip_ratio."""
    clip_ratio_high: float | None = None
    """None: clip_ratio."""
    kl_coef: float | None = None
    """None: init's kl_coef."""
    kl_estimator: str = _D["kl_estimator"]
    entropy_coef: float = float(_D["entropy_coef"])
    loss_agg_mode: str = _D["loss_agg_mode"]
    epochs: int = _D["epochs"]
    minibatch_size: int | None = None
    """None: every sample in one optimizer step."""
    micro_batch_size: int | None = None
    """None: the minibatch in one forward/backward."""
    max_grad_norm: float = float(_D["max_grad_norm"])
    """0 = no clipping."""
    temperature: float = float(_D["temperature"])
    """Already mapped: 0 (greedy) is scored at 1."""
    lr: float | None = None
    """None: keep the optimizer's learning rate."""

    @classmethod
    def read(cls, p: Params, engine: "Engine") -> "UpdateArgs":
        """Typed values from the request (the schema has checked types and ranges already)."""
        d = cls()
        clip = p.float("clip_ratio", d.clip_ratio, min=0.0)
        return cls(
            clip_ratio=clip,
            clip_ratio_low=p.float("clip_ratio_low", clip, min=0.0, max=1.0),
            clip_ratio_high=p.float("clip_ratio_high", clip, min=0.0),
            kl_coef=p.float("kl_coef", engine.cfg.kl_coef, min=0.0),
            kl_estimator=p.str("kl_estimator", d.kl_estimator, choices=tuple(sorted(L.KL_ESTIMATORS))),
            entropy_coef=p.float("entropy_coef", d.entropy_coef),
            loss_agg_mode=p.str("loss_agg_mode", d.loss_agg_mode, choices=L.AGG_MODES),
            epochs=p.int("epochs", d.epochs, min=1),
            minibatch_size=p.int("minibatch_size", None, min=1),
            micro_batch_size=p.int("micro_batch_size", None, min=1),
            max_grad_norm=p.float("max_grad_norm", d.max_grad_norm, min=0.0),
            temperature=engine._read_temperature(p)[0],
            lr=p.float("lr", None, min=0.0),
        )

    def loss_config(self) -> L.LossConfig:
        return L.LossConfig(
            clip_ratio_low=self.clip_ratio if self.clip_ratio_low is None else self.clip_ratio_low,
            clip_ratio_high=self.clip_ratio if self.clip_ratio_high is None else self.clip_ratio_high,
            kl_coef=self.kl_coef or 0.0,
            kl_estimator=self.kl_estimator,
            entropy_coef=self.entropy_coef,
            loss_agg_mode=self.loss_agg_mode,
        )


def update(engine: "Engine", p: Params) -> dict:
    b = engine._require()
    t_start = time.perf_counter()
    args = UpdateArgs.read(p, engine)
    default_allowed = engine._read_completion_set(p.raw("allowed", None), "params.allowed")
    raw_samples = p.list("samples")
    p.finish()
    lc = args.loss_config()
    epochs, temperature, lr, max_grad_norm = args.epochs, args.temperature, args.lr, args.max_grad_norm
    minibatch, micro = args.minibatch_size, args.micro_batch_size
    if lc.kl_coef > 0 and not b.has_reference:
        raise InvalidRequest("params.kl_coef: > 0 needs the frozen reference, which init keeps only when its kl_coef > 0")

    prompts, responses, olds, advs, masks, sets = [], [], [], [], [], []
    for i, raw in enumerate(raw_samples):
        sp = Params(raw, f"params.samples[{i}]")
        prompts.append(engine._check_ids(sp.raw("prompt_ids"), f"params.samples[{i}].prompt_ids", nonempty=True))
        resp = engine._check_ids(sp.raw("response_ids"), f"params.samples[{i}].response_ids", nonempty=True)
        responses.append(resp)
        n = len(resp)
        old = sp.raw("old_logprobs", None)
        olds.append(None if old is None else check_float_list(old, f"params.samples[{i}].old_logprobs", n))
        if not sp.has("advantages"):
            raise InvalidRequest(f"params.samples[{i}].advantages: required (a number or one per token)")
        adv = sp.raw("advantages")
        if isinstance(adv, (int, float)) and not isinstance(adv, bool):
            advs.append([float(check_float_list([adv], f"params.samples[{i}].advantages")[0])] * n)
        else:
            advs.append(check_float_list(adv, f"params.samples[{i}].advantages", n))
        m = sp.raw("mask", None)
        if m is not None:
            m = check_int_list(m, f"params.samples[{i}].mask", lo=0, hi=2)
            if len(m) != n:
                raise InvalidRequest(f"params.samples[{i}].mask: expected {n} entries (one per response token)")
        masks.append(m)
        sets.append(engine._read_completion_set(sp.raw("allowed"), f"params.samples[{i}].allowed")
                    if sp.has("allowed") else default_allowed)
        sp.finish()
    S = len(prompts)
    if S == 0:
        raise InvalidRequest("params.samples: must not be empty")
    minibatch = minibatch or S
    micro = min(micro or minibatch, minibatch)
    if lr is not None:
        for g in engine.optimizer.param_groups:
            g["lr"] = lr

    prep = engine._prepare(prompts, responses, sets, masks, drop_forced=True)
    bad = (~prep.ok) & prep.keep
    if bool(bad.any()):
        i = int(bad.any(1).nonzero()[0])
        raise InvalidRequest(f"params.samples[{i}].response_ids: a token is outside the sample's allowed completions")
    dev = b.device
    Lr = prep.resp.shape[1]

    def pad_rows(rows: list[list[float] | None]) -> torch.Tensor:
        out = np.zeros((S, Lr), dtype=np.float32)
        for i, row in enumerate(rows):
            if row is not None:
                out[i, : len(row)] = row
        return torch.from_numpy(out).to(dev)

    adv_pad = pad_rows(advs)  # (S, Lr)
    missing_old = [i for i, o in enumerate(olds) if o is None]
    old_pad = pad_rows(olds)  # (S, Lr)
    if missing_old:  # no behaviour log-probs given: the current policy's (ratio 1 at first)
        cur = engine._score_all(prep, temperature, micro)
        rows = torch.tensor(missing_old, device=dev)
        old_pad[rows] = cur[rows]
    ref_pad = engine._score_all(prep, temperature, micro, reference=True) if lc.kl_coef > 0 else None
    seq_len = prep.keep.sum(1)  # (S,) trained tokens per sample

    params = b.trainable_parameters()
    sums: dict[str, float] = {}
    n_steps = 0
    for _epoch in range(epochs):
        perm = torch.randperm(S, generator=engine.shuffle_gen).to(dev)
        for mb in perm.split(minibatch):
            mb_tokens = int(seq_len[mb].sum())
            if mb_tokens == 0:
                continue
            mb_seqs = int((seq_len[mb] > 0).sum())
            engine.optimizer.zero_grad(set_to_none=True)
            stats = {k: 0.0 for k in ("loss", "pg_loss", "kl", "entropy", "clip_frac", "approx_kl")}
            for idx in mb.split(micro):
                if int(seq_len[idx].sum()) == 0:
                    continue
                logp, ent, r, c = engine._score(prep, idx, temperature, with_entropy=True)
                rows = idx[r]
                w = L.token_weights(seq_len[rows], lc.loss_agg_mode, mb_tokens, mb_seqs)  # (N,)
                out = L.ppo_loss(
                    logp, old_pad[rows, c], adv_pad[rows, c], w, lc,
                    ref_logp=ref_pad[rows, c] if ref_pad is not None else None,
                    entropy=ent if lc.entropy_coef != 0 else ent.detach(),
                )
                out["loss"].backward()
                for k in stats:
                    stats[k] += float(out[k].detach())
            # ||g|| before clipping; max_grad_norm 0 = no clipping
            grad_norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm if max_grad_norm > 0 else float("inf"))
            engine.optimizer.step()
            engine.update_steps += 1
            n_steps += 1
            stats["grad_norm"] = float(grad_norm)
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v
    secs = time.perf_counter() - t_start
    mean = {k: v / max(n_steps, 1) for k, v in sums.items()}
    n_tok = int(seq_len.sum())
    metrics = {
        "losses/loss": mean.get("loss"),
        "losses/pg_loss": mean.get("pg_loss"),
        "losses/kl": mean.get("kl") if lc.kl_coef > 0 else None,
        "losses/entropy": mean.get("entropy"),
        "losses/clip_frac": mean.get("clip_frac"),
        "losses/approx_kl": mean.get("approx_kl"),
        "losses/grad_norm": mean.get("grad_norm"),
        "perf/num_tokens": n_tok,
        "perf/num_samples": S,
        "perf/optimizer_steps": n_steps,
        "perf/update_seconds": secs,
        "perf/lr": engine.optimizer.param_groups[0]["lr"],
    }
    return {"metrics": metrics, "update_steps": engine.update_steps}
