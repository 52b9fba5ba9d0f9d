"""Tiny randomly initialised Hugging Face models (GPT-2 and LLaMA configs, tokenizer trained in
the test, nothing downloaded) through the same protocol, in a real subprocess."""

from __future__ import annotations

import math

import pytest
from conftest import EngineProcess


@pytest.fixture(scope="module")
def hf_proc():
    proc = EngineProcess()
    yield proc
    proc.close()


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


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_hf_generate_update_save_load(hf_proc, hf_models, arch, tmp_path):
    e = hf_proc
    info = e.call("init", {"model": str(hf_models[arch]), "kl_coef": 0.05, "threads": 1, "device": "cpu", "seed": 0})
    assert info["model_kind"] == "hf" and info["device"] == "cpu" and info["has_reference"] is True
    assert info["trainable_params"] == info["num_params"]

    # strings go through the chat template (the tokenizer has one); message lists too
    gen = e.call(
        "generate",
        {
            "prompts": ["S F F H", [{"role": "user", "content": "left or right?"}]],
            "n": 2,
            "max_new_tokens": 5,
            "temperature": 1.0,
            "top_p": 0.9,
        },
    )
    assert len(gen["responses"]) == 4
    for r in gen["responses"]:
        assert 1 <= len(r["response_ids"]) <= 5 and len(r["logprobs"]) == len(r["response_ids"])
    scored = e.call(
        "logprobs",
        {
            "prompt_ids": [r["prompt_ids"] for r in gen["responses"]],
            "response_ids": [r["response_ids"] for r in gen["responses"]],
        },
    )
    for g, s in zip(gen["responses"], scored["results"]):
        assert s["logprobs"] == pytest.approx(g["logprobs"], abs=1e-4)

    # allowed restricts a Hugging Face model too
    restricted = e.call("generate", {"prompts": ["S F F H"], "n": 8, "allowed": ["left", "right", "up", "down"]})
    assert {r["text"] for r in restricted["responses"]} <= {"left", "right", "up", "down"}
    # per token: its text (the tokenizer's decode of that id alone; an action may be several tokens)
    # and the entropy of pi, at most log(4) at the first token (four allowed actions)
    for r in restricted["responses"]:
        assert len(r["token_texts"]) == len(r["entropies"]) == len(r["response_ids"])
        assert "".join(r["token_texts"]).startswith(r["text"]) and 0 <= r["entropies"][0] <= math.log(4) + 1e-5

    m = e.call(
        "update",
        {"samples": _samples(gen["responses"], [1.0, -1.0, 0.5, -0.5]), "lr": 1e-3, "epochs": 2, "minibatch_size": 2},
    )["metrics"]
    assert m["perf/optimizer_steps"] == 4 and m["losses/grad_norm"] > 0
    assert m["losses/kl"] is not None and m["losses/kl"] >= 0

    probe = {"prompts": ["S F F H", "G"], "responses": ["left", "down up"]}
    before = e.call("logprobs", probe)
    e.call("save", {"path": str(tmp_path / "ck")})
    e.call("update", {"samples": _samples(gen["responses"], [1.0, 1.0, 1.0, 1.0]), "lr": 1e-2})
    assert e.call("logprobs", probe) != before  # the policy moved...
    e.call("load", {"path": str(tmp_path / "ck")})
    assert e.call("logprobs", probe) == before  # ...and the checkpoint brings it back exactly


def test_hf_lora(hf_proc, hf_models, tmp_path):
    e = hf_proc
    info = e.call(
        "init",
        {
            "model": str(hf_models["llama"]),
            "kl_coef": 0.1,
            "threads": 1,
            "device": "cpu",
            "lora": {"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]},
        },
    )
    assert info["lora"] is True and 0 < info["trainable_params"] < info["num_params"]
    assert info["has_reference"] is True  # the base model with the adapter disabled
    gen = e.call("generate", {"prompts": ["S F F H"], "n": 4, "max_new_tokens": 3, "seed": 0})
    m = e.call("update", {"samples": _samples(gen["responses"], [1.0, -1.0, 1.0, -1.0]), "lr": 5e-3})["metrics"]
    assert m["losses/kl"] == pytest.approx(0.0, abs=1e-6)  # LoRA B starts at 0: policy == reference
    m = e.call("update", {"samples": _samples(gen["responses"], [1.0, -1.0, 1.0, -1.0]), "lr": 5e-3})["metrics"]
    assert m["losses/kl"] > 0
    probe = {"prompts": ["S F F H"], "responses": ["left"]}
    before = e.call("logprobs", probe)
    saved = e.call("save", {"path": str(tmp_path / "lora")})
    assert "model" in saved["files"]
    e.call("load", {"path": str(tmp_path / "lora")})
    assert e.call("logprobs", probe) == before


def test_hf_export_onnx(hf_proc, hf_models, tmp_path):
    e = hf_proc
    e.call("init", {"model": str(hf_models["gpt2"]), "threads": 1, "device": "cpu"})
    res = e.call("export_onnx", {"path": str(tmp_path / "gpt2.onnx")})
    assert res["max_abs_diff"] < 1e-4


def test_hf_saved_adapter(hf_proc, hf_models, tmp_path):
    """A LoRA adapter saved by peft outside TurnLens (what TRL or verl save) put on its base model:
    the engine's log-probs are the adapted model's, computed here with peft directly."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = hf_models["llama"]
    torch.manual_seed(1)
    # init_lora_weights=False: B is random too, so the adapter moves the policy off the base
    lora = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False, task_type="CAUSAL_LM"
    )
    peft_model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base, local_files_only=True, dtype=torch.float32), lora
    ).eval()
    peft_model.save_pretrained(tmp_path / "adapter")
    prompt, response = [3, 7, 11, 5], [9, 4, 2]
    with torch.no_grad():
        logits = peft_model(torch.tensor([prompt + response])).logits[0].log_softmax(-1)
    want = [logits[len(prompt) - 1 + i, t].item() for i, t in enumerate(response)]

    e = hf_proc
    probe = {"prompt_ids": [prompt], "response_ids": [response]}
    e.call("init", {"model": str(base), "threads": 1, "device": "cpu"})
    plain = e.call("logprobs", probe)["results"][0]["logprobs"]
    info = e.call("init", {"model": str(base), "adapter": str(tmp_path / "adapter"), "threads": 1, "device": "cpu"})
    assert info["lora"] is True and 0 < info["trainable_params"] < info["num_params"]
    adapted = e.call("logprobs", probe)["results"][0]["logprobs"]
    assert adapted == pytest.approx(want, abs=1e-5)
    assert max(abs(a - b) for a, b in zip(adapted, plain)) > 1e-3

    # a directory without adapter_config.json, and an adapter on the tiny model, are refused naming the field
    r = e.call("init", {"model": str(base), "adapter": str(base), "device": "cpu"}, ok=False)
    assert not r["ok"] and "params.adapter" in r["error"]["message"] and "adapter_config.json" in r["error"]["message"]
    r = e.call("init", {"model": "tiny", "adapter": str(tmp_path / "adapter"), "tokenizer": {"kind": "char"}}, ok=False)
    assert not r["ok"] and "params.adapter" in r["error"]["message"]
