"""The engine on CUDA (marker `gpu`: skipped without a CUDA device; scripts/gpu-check.sh runs
them on a GPU machine). Same protocol as on CPU, with bf16 autocast, so the comparisons with the
CPU path are loose (bf16 keeps about 3 significant digits)."""

from __future__ import annotations

import math

import pytest
from conftest import ACTIONS, GRIDS, tiny_init_params

pytestmark = pytest.mark.gpu


def _samples(responses, advs):
    return [
        {
            "prompt_ids": r["prompt_ids"],
            "response_ids": r["response_ids"],
            "old_logprobs": r["logprobs"],
            "advantages": a,
        }
        for r, a in zip(responses, advs)
    ]


def test_tiny_on_cuda_generate_score_update_save_load(engine, tmp_path):
    info = engine.call("init", **tiny_init_params(device="cuda"))
    assert (info["device"], info["precision"]) == ("cuda", "bf16-autocast")
    gen = engine.call("generate", prompts=GRIDS, n=8, allowed=ACTIONS, max_new_tokens=4)
    assert len(gen["responses"]) == 8 * len(GRIDS)
    assert all(r["text"] in ACTIONS and math.isfinite(r["logprobs"][0]) for r in gen["responses"])
    # scoring the generated responses gives the log-probs generation reported (bf16 tolerance)
    r0 = gen["responses"][0]
    scored = engine.call("logprobs", prompts=[GRIDS[r0["prompt_index"]]], responses=[r0["text"]], allowed=ACTIONS)
    assert scored["results"][0]["sum"] == pytest.approx(sum(r0["logprobs"]), abs=0.05)

    # a positive advantage on one action raises its probability
    probe = {"prompts": GRIDS[:1], "responses": ["left"], "allowed": ACTIONS}
    before = engine.call("logprobs", **probe)["results"][0]["sum"]
    target = [r for r in gen["responses"] if r["text"] == "left"] or gen["responses"][:1]
    samples = _samples(target, [1.0] * len(target))
    for _ in range(5):
        m = engine.call("update", samples=samples, allowed=ACTIONS, lr=1e-2)["metrics"]
        assert math.isfinite(m["losses/loss"])
    if target[0]["text"] == "left":
        assert engine.call("logprobs", **probe)["results"][0]["sum"] > before

    saved = engine.call("logprobs", **probe)
    engine.call("save", path=str(tmp_path / "ck"))
    engine.call("update", samples=samples, allowed=ACTIONS, lr=1e-2)
    engine.call("load", path=str(tmp_path / "ck"), device="cuda")
    assert engine.call("logprobs", **probe)["results"][0]["sum"] == pytest.approx(saved["results"][0]["sum"], abs=1e-3)


def test_tiny_cuda_and_cpu_agree_on_the_same_weights(engine, tmp_path):
    engine.call("init", **tiny_init_params(device="cpu"))
    engine.call("save", path=str(tmp_path / "w"))
    probe = {"prompts": GRIDS, "responses": ACTIONS[:3], "allowed": ACTIONS}
    cpu = [r["sum"] for r in engine.call("logprobs", **probe)["results"]]
    info = engine.call("load", path=str(tmp_path / "w"), device="cuda")  # the same weights, moved to CUDA
    assert info["device"] == "cuda"
    cuda = [r["sum"] for r in engine.call("logprobs", **probe)["results"]]
    assert cuda == pytest.approx(cpu, abs=0.05)


def test_hf_lora_on_cuda(hf_models):
    from workers.engine.engine import Engine
    from workers.engine.protocol import Params

    e = Engine()
    call = lambda cmd, **p: e.dispatch(cmd, Params(p))  # noqa: E731
    info = call(
        "init",
        model=str(hf_models["llama"]),
        kl_coef=0.1,
        device="cuda",
        seed=0,
        lora={"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]},
    )
    assert info["device"] == "cuda" and info["lora"] is True and 0 < info["trainable_params"] < info["num_params"]
    gen = call("generate", prompts=["S F F H"], n=4, max_new_tokens=3, seed=0)
    samples = _samples(gen["responses"], [1.0, -1.0, 1.0, -1.0])
    m = call("update", samples=samples, lr=5e-3)["metrics"]
    assert m["losses/kl"] == pytest.approx(0.0, abs=1e-3)  # LoRA B starts at 0: policy == reference
    m = call("update", samples=samples, lr=5e-3)["metrics"]
    assert m["losses/kl"] > 0 and math.isfinite(m["losses/loss"])
