"""PPO-clip loss, KL estimators and aggregation against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import ACTIONS, GRIDS, tiny_init_params

from workers.engine import ppo as L
from workers.engine.protocol_types import UpdateParams
from workers.engine.sampling import policy_entropy


def ppo_cfg(**knobs) -> UpdateParams:
    """update's params as the loss reads them: the protocol's defaults, ``knobs`` set, no KL unless given."""
    return L.resolved(UpdateParams(samples=[], **knobs), init_kl_coef=0.0)


def t(*xs):
    return torch.tensor(xs, dtype=torch.float32)


# --------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------

LOGP = t(-1.0, -0.5, -2.0)
OLD = t(-1.2, -0.5, -1.5)
ADV = t(1.0, -1.0, 2.0)
# ratio = exp(logp - old) = [e^0.2, 1, e^-0.5] = [1.221403, 1.0, 0.606531]
# token 0: A = 1:  -A r = -1.221403, -A clip(r) = -1.2       -> max = -1.2 (clip active)
# token 1: A = -1: r = 1                                     -> 1.0
# token 2: A = 2:  -A r = -1.213061, -A clip(r) = -2 * 0.8 = -1.6 -> max = -1.213061
PG = [-1.2, 1.0, -2.0 * math.exp(-0.5)]


def test_ppo_clip_token_mean_hand_computed():
    w = L.token_weights(t(3, 3, 3), "token-mean")
    out = L.ppo_loss(LOGP, OLD, ADV, w, ppo_cfg())
    assert out["pg_loss"].item() == pytest.approx(sum(PG) / 3, abs=1e-6)  # -0.4710204
    assert out["pg_loss"].item() == pytest.approx(-0.4710204, abs=1e-6)
    assert out["clip_frac"].item() == pytest.approx(1 / 3)
    assert out["kl"].item() == 0.0 and out["entropy"].item() == 0.0
    assert out["loss"].item() == pytest.approx(out["pg_loss"].item())


def test_ppo_clip_seq_mean_token_mean_hand_computed():
    # tokens 0 and 1 belong to a 2-token sequence, token 2 to a 1-token sequence
    w = L.token_weights(t(2, 2, 1), "seq-mean-token-mean")
    assert w.tolist() == pytest.approx([0.25, 0.25, 0.5])
    out = L.ppo_loss(LOGP, OLD, ADV, w, ppo_cfg())
    assert out["pg_loss"].item() == pytest.approx(((PG[0] + PG[1]) / 2 + PG[2]) / 2, abs=1e-6)  # -0.6565306


def test_clip_higher_and_negative_advantages():
    # r = 1.5: with eps_high 0.28 the clip is at 1.28; A < 0 takes max(-A r, -A clip(r)) = -A r
    cfg = ppo_cfg(clip_ratio_low=0.2, clip_ratio_high=0.28)
    out = L.ppo_loss(t(math.log(1.5)), t(0.0), t(1.0), t(1.0), cfg)
    assert out["pg_loss"].item() == pytest.approx(-1.28, abs=1e-6)
    out = L.ppo_loss(t(math.log(1.5)), t(0.0), t(-1.0), t(1.0), cfg)
    assert out["pg_loss"].item() == pytest.approx(1.5, abs=1e-6)
    assert out["clip_frac"].item() == 0.0


def test_dual_clip_caps_the_loss_of_negative_advantages():
    # A = -1, r = e^3 = 20.09: plain PPO-clip gives -A r = 20.09; the dual clip caps it at -c A = 3
    cfg = ppo_cfg()
    assert cfg.clip_ratio_c == 3.0  # verl's default
    logp = t(3.0).requires_grad_()
    out = L.ppo_loss(logp, t(0.0), t(-1.0), t(1.0), cfg)
    assert out["pg_loss"].item() == pytest.approx(3.0, abs=1e-6)
    assert out["dual_clip_frac"].item() == 1.0
    out["loss"].backward()
    assert logp.grad.item() == 0.0  # capped: this token no longer pushes the step
    # below the cap (r = 2 < c), and for positive advantages, the dual clip changes nothing
    out = L.ppo_loss(t(math.log(2.0)), t(0.0), t(-1.0), t(1.0), cfg)
    assert out["pg_loss"].item() == pytest.approx(2.0, abs=1e-6) and out["dual_clip_frac"].item() == 0.0
    out = L.ppo_loss(t(3.0), t(0.0), t(1.0), t(1.0), cfg)
    assert out["pg_loss"].item() == pytest.approx(-1.2, abs=1e-6) and out["dual_clip_frac"].item() == 0.0
    # a larger c caps later
    out = L.ppo_loss(t(3.0), t(0.0), t(-1.0), t(1.0), ppo_cfg(clip_ratio_c=10.0))
    assert out["pg_loss"].item() == pytest.approx(10.0, abs=1e-6)


def test_log_ratio_is_clamped_before_exp():
    # an explored action the old policy gave probability e^-90: the ratio must stay finite
    out = L.ppo_loss(t(0.0), t(-90.0), t(1.0), t(1.0), ppo_cfg())
    assert out["pg_loss"].item() == pytest.approx(-1.2, abs=1e-6)
    assert math.isfinite(out["approx_kl"].item())
    assert out["approx_kl"].item() == pytest.approx(math.exp(20.0) - 1.0 - 20.0, rel=1e-5)


def test_kl_estimators_hand_computed():
    logp, ref = t(-1.0, -0.5), t(-1.5, -0.25)
    # k1 = logp - ref = [0.5, -0.25]
    assert L.get_kl_estimator("k1")(logp, ref).tolist() == pytest.approx([0.5, -0.25])
    # k2 = (logp - ref)^2 / 2 = [0.125, 0.03125]
    assert L.get_kl_estimator("k2")(logp, ref).tolist() == pytest.approx([0.125, 0.03125])
    # k3 = e^(ref - logp) - 1 - (ref - logp) = [e^-0.5 - 0.5, e^0.25 - 1.25] = [0.1065307, 0.0340254]
    assert L.get_kl_estimator("k3")(logp, ref).tolist() == pytest.approx([0.1065307, 0.0340254], abs=1e-6)
    with pytest.raises(ValueError, match="known: k1, k2, k3"):
        L.get_kl_estimator("k4")


def test_total_loss_combines_pg_kl_entropy():
    logp, old, adv, ref = t(-1.0, -0.5), t(-1.0, -0.5), t(1.0, 1.0), t(-1.5, -0.25)
    ent = t(1.0, 2.0)
    cfg = ppo_cfg(kl_coef=0.1, kl_estimator="k1", entropy_coef=0.01)
    out = L.ppo_loss(logp, old, adv, L.token_weights(t(2, 2), "token-mean"), cfg, ref_logp=ref, entropy=ent)
    # pg = -1 (ratio 1, A = 1); KL_k1 = mean(0.5, -0.25) = 0.125; H = 1.5
    assert out["pg_loss"].item() == pytest.approx(-1.0)
    assert out["kl"].item() == pytest.approx(0.125)
    assert out["entropy"].item() == pytest.approx(1.5)
    assert out["loss"].item() == pytest.approx(-1.0 + 0.1 * 0.125 - 0.01 * 1.5)


def test_micro_batch_weights_add_up_to_the_minibatch():
    seq_len = t(2, 2, 1, 3, 3, 3)
    for mode in L.AGG_MODES:
        whole = L.token_weights(seq_len, mode)
        parts = torch.cat([L.token_weights(seq_len[:3], mode, 6, 3), L.token_weights(seq_len[3:], mode, 6, 3)])
        assert parts.tolist() == pytest.approx(whole.tolist())
        assert whole.sum().item() == pytest.approx(1.0)


def test_entropy_ignores_masked_tokens():
    logp_all = torch.log_softmax(torch.tensor([[0.0, 0.0, float("-inf")]]), -1)
    assert policy_entropy(logp_all).item() == pytest.approx(math.log(2))


def test_entropy_gradient_is_finite_with_masked_tokens():
    """The entropy bonus trains through restricted sampling: masked (-inf) tokens give no NaN gradient."""
    from workers.engine.sampling import policy_logprobs

    logits = torch.tensor([[0.3, -0.2, 1.0, 0.5], [0.0, 2.0, -1.0, 0.1]], requires_grad=True)
    mask = torch.tensor([[True, True, False, False], [True, False, True, True]])
    policy_entropy(policy_logprobs(logits, 1.0, mask)).sum().backward()
    assert torch.isfinite(logits.grad).all()
    assert (logits.grad[~mask] == 0).all()  # masked tokens are not in pi
    # dH/dz of the allowed tokens: -p_i (log p_i + H), the softmax entropy's gradient
    p = torch.softmax(torch.tensor([0.3, -0.2]), -1)
    h = -(p * p.log()).sum()
    assert logits.grad[0, :2].tolist() == pytest.approx((-p * (p.log() + h)).tolist(), abs=1e-6)


def test_update_with_entropy_bonus_keeps_the_policy_finite(engine):
    """entropy_coef > 0 on restricted samples, zero advantages kept: the policy stays a distribution."""
    engine.call("init", **tiny_init_params())
    gen = engine.call("generate", prompts=GRIDS, n=4, allowed=ACTIONS, seed=3)
    samples = [
        {
            "prompt_ids": r["prompt_ids"],
            "response_ids": r["response_ids"],
            "old_logprobs": r["logprobs"],
            "advantages": float(i % 3 - 1),
        }
        for i, r in enumerate(gen["responses"])
    ]
    for _ in range(3):
        m = engine.call("update", samples=samples, entropy_coef=0.05, lr=1e-2, allowed=ACTIONS)["metrics"]
        assert math.isfinite(m["losses/loss"]) and m["losses/entropy"] > 0
    again = engine.call("generate", prompts=GRIDS, n=4, allowed=ACTIONS, seed=4)["responses"]
    assert all(all(math.isfinite(x) for x in r["logprobs"]) for r in again)


# --------------------------------------------------------------------------------------------
# The engine's update reports the same numbers
# --------------------------------------------------------------------------------------------


def test_update_reports_hand_computed_pg_and_kl(engine):
    engine.call("init", **tiny_init_params(kl_coef=0.5))
    prompts = GRIDS[:2]
    gen = engine.call("generate", prompts=prompts, n=2, allowed=ACTIONS)
    samples = [
        {"prompt_ids": r["prompt_ids"], "response_ids": r["response_ids"], "advantages": 1.0} for r in gen["responses"]
    ]
    engine.call("update", samples=samples, lr=1e-2, allowed=ACTIONS)  # move away from the reference

    pids = [s["prompt_ids"] for s in samples]
    rids = [s["response_ids"] for s in samples]
    cur = [
        r["logprobs"][0]
        for r in engine.call("logprobs", prompt_ids=pids, response_ids=rids, allowed=ACTIONS)["results"]
    ]
    ref = [
        r["logprobs"][0]
        for r in engine.call("logprobs", prompt_ids=pids, response_ids=rids, allowed=ACTIONS, model="reference")[
            "results"
        ]
    ]
    deltas = [0.3, -0.3, 0.05, 0.0]
    advs = [1.0, -2.0, 0.5, 1.5]
    old = [c - d for c, d in zip(cur, deltas)]
    for s, o, a in zip(samples, old, advs):
        s["old_logprobs"] = [o]
        s["advantages"] = a
    m = engine.call("update", samples=samples, epochs=1, allowed=ACTIONS, kl_estimator="k3", clip_ratio=0.2)["metrics"]

    pg = []
    for d, a in zip(deltas, advs):
        r = math.exp(d)
        pg.append(max(-a * r, -a * min(max(r, 0.8), 1.2)))
    k3 = [math.exp(rf - c) - 1 - (rf - c) for c, rf in zip(cur, ref)]
    assert m["losses/pg_loss"] == pytest.approx(sum(pg) / 4, abs=1e-5)
    assert m["losses/kl"] == pytest.approx(sum(k3) / 4, abs=1e-6)
    assert m["losses/kl"] > 0
    assert m["losses/loss"] == pytest.approx(m["losses/pg_loss"] + 0.5 * m["losses/kl"], abs=1e-6)
    assert m["losses/clip_frac"] == pytest.approx(0.5)  # deltas +-0.3 leave [0.8, 1.2] in the clipped direction


def test_micro_batches_give_the_same_step(engine):
    """Gradient accumulation over micro-batches equals one big batch (both aggregation modes)."""
    from workers.engine.engine import Engine
    from workers.engine.protocol import Params

    for mode in L.AGG_MODES:
        results = []
        for micro in (None, 1):
            e = Engine()
            e.dispatch("init", Params(tiny_init_params()))
            gen = e.dispatch("generate", Params({"prompts": GRIDS, "n": 2, "max_new_tokens": 3, "seed": 1}))
            samples = [
                {
                    "prompt_ids": r["prompt_ids"],
                    "response_ids": r["response_ids"],
                    "old_logprobs": r["logprobs"],
                    "advantages": float(i % 3 - 1),
                }
                for i, r in enumerate(gen["responses"])
            ]
            e.dispatch(
                "update", Params({"samples": samples, "micro_batch_size": micro, "loss_agg_mode": mode, "lr": 1e-2})
            )
            lp = e.dispatch(
                "logprobs",
                Params(
                    {
                        "prompt_ids": [s["prompt_ids"] for s in samples],
                        "response_ids": [s["response_ids"] for s in samples],
                    }
                ),
            )
            results.append([x for r in lp["results"] for x in r["logprobs"]])
        assert results[0] == pytest.approx(results[1], abs=1e-5)
