"""The tiny model in process: allowed, sampling, padding, save/load, ONNX, learning."""

from __future__ import annotations

import logging
import math
import random
import sys

import numpy as np
import pytest
import torch
from conftest import ACTIONS, GRIDS, tiny_init_params

from workers.engine.errors import InvalidRequest


def test_device_auto_picks_cuda_when_available(engine):
    info = engine.call("init", **tiny_init_params(device="auto"))
    cuda = torch.cuda.is_available()
    assert info["cuda_available"] is cuda
    assert (info["device"], info["precision"]) == (("cuda", "bf16-autocast") if cuda else ("cpu", "fp32"))
    info = engine.call("init", **tiny_init_params(device="cpu"))
    assert (info["device"], info["precision"]) == ("cpu", "fp32")


def test_allowed_restricts_outputs(engine):
    engine.call("init", **tiny_init_params())
    gen = engine.call("generate", prompts=GRIDS, n=20, allowed=ACTIONS, max_new_tokens=8)
    texts = {r["text"] for r in gen["responses"]}
    assert texts <= set(ACTIONS) and len(texts) > 1  # restricted, and still sampling
    assert all(r["finish_reason"] == "allowed" for r in gen["responses"])
    # the reported log-probs are under the restricted, renormalised distribution
    lp = engine.call("logprobs", prompts=GRIDS, responses=ACTIONS[:3], allowed=ACTIONS)
    for res in lp["results"]:
        assert res["sum"] > np.log(1e-6)
    probs = [
        np.exp(engine.call("logprobs", prompts=GRIDS[:1], responses=[a], allowed=ACTIONS)["results"][0]["sum"])
        for a in ACTIONS
    ]
    assert sum(probs) == pytest.approx(1.0, abs=1e-5)
    # a token outside the allowed set scores log 0 (sent as null over the wire)
    out = engine.call("logprobs", prompts=GRIDS[:1], responses=["F"], allowed=ACTIONS)["results"][0]
    assert out["logprobs"][0] == float("-inf")


def test_allowed_multi_token_prefix_and_per_prompt(engine):
    engine.call("init", **tiny_init_params())
    # "up" is a prefix of "up up": after "up" the sample chooses between " " and EOS
    gen = engine.call("generate", prompts=GRIDS, n=16, allowed=["up", "up up", "left right"], max_new_tokens=6)
    texts = {r["text"] for r in gen["responses"]}
    assert texts <= {"up", "up up", "left right"}
    for r in gen["responses"]:
        if r["text"] == "up":
            assert r["response_ids"][-1] == 2 and r["finish_reason"] == "eos"  # EOS disambiguated
        if r["text"] == "left right":  # forced tokens after "left" have log-prob 0
            assert r["logprobs"][1:] == pytest.approx([0.0, 0.0], abs=1e-6)
    per = engine.call("generate", prompts=GRIDS[:2], n=8, allowed_per_prompt=[["left"], None], max_new_tokens=3)
    assert all(r["text"] == "left" for r in per["responses"][:8])
    # token-id completions are allowed too
    tid = engine.e.state.backend.tokenizer.index["down"]
    ids = engine.call("generate", prompts=GRIDS[:1], n=4, allowed=[tid])
    assert all(r["response_ids"] == [tid] for r in ids["responses"])


def test_generate_logprobs_match_scoring_and_padding(engine):
    """KV-cached, left-padded generation and right-padded full scoring agree per token."""
    engine.call("init", **tiny_init_params())
    prompts = ["S F", GRIDS[0], "F F H G"]  # different lengths -> left padding
    gen = engine.call("generate", prompts=prompts, n=2, max_new_tokens=6, seed=3)
    lp = engine.call(
        "logprobs",
        prompt_ids=[r["prompt_ids"] for r in gen["responses"]],
        response_ids=[r["response_ids"] for r in gen["responses"]],
    )
    for g, s in zip(gen["responses"], lp["results"]):
        assert s["logprobs"] == pytest.approx(g["logprobs"], abs=1e-5)
        # scoring reports the entropy of pi at each token as sampling did (the trainer stores it
        # for actions it swapped in by exploration, which were scored, not sampled)
        assert s["entropies"] == pytest.approx(g["entropies"], abs=1e-5)
    # the same under an admissible-action restriction: the renormalised distribution's entropy
    allowed = [["down", "up", "left"], ["right"], ["down", "right"]]
    gen = engine.call("generate", prompts=prompts, allowed_per_prompt=allowed, seed=4, temperature=0.8)
    lp = engine.call(
        "logprobs",
        prompt_ids=[r["prompt_ids"] for r in gen["responses"]],
        response_ids=[r["response_ids"] for r in gen["responses"]],
        allowed_per_prompt=allowed,
        temperature=0.8,
    )
    for g, s in zip(gen["responses"], lp["results"]):
        assert s["logprobs"] == pytest.approx(g["logprobs"], abs=1e-5)
        assert s["entropies"] == pytest.approx(g["entropies"], abs=1e-5)
    # greedy: the short prompt alone gives the same tokens and log-probs as in the padded batch
    batch = engine.call("generate", prompts=prompts, max_new_tokens=6, greedy=True)
    alone = engine.call("generate", prompts=["S F"], max_new_tokens=6, greedy=True)
    assert alone["responses"][0]["response_ids"] == batch["responses"][0]["response_ids"]
    assert alone["responses"][0]["logprobs"] == pytest.approx(batch["responses"][0]["logprobs"], abs=1e-5)
    # n copies of a prompt are prefilled once and copied: same greedy tokens and log-probs
    copies = engine.call("generate", prompts=prompts, n=3, max_new_tokens=6, greedy=True)
    for i, r in enumerate(copies["responses"]):
        assert r["response_ids"] == batch["responses"][i // 3]["response_ids"]
        assert r["logprobs"] == pytest.approx(batch["responses"][i // 3]["logprobs"], abs=1e-5)


def test_generate_returns_token_texts_and_entropies(engine):
    """Per response token: its text (the token view shows it), and the entropy of pi where it was
    sampled, which matches the entropy recomputed from the model's logits; restricted sampling
    (`allowed`) has the entropy of the renormalised, restricted distribution."""
    from workers.engine.sampling import policy_logprobs

    engine.call("init", **tiny_init_params())
    tok = engine.e.state.backend.tokenizer
    gen = engine.call("generate", prompts=GRIDS[:2], n=2, max_new_tokens=4, seed=5, temperature=0.7)
    for r in gen["responses"]:
        n = len(r["response_ids"])
        assert n > 0 and len(r["entropies"]) == n and len(r["token_texts"]) == n
        assert r["token_texts"] == [tok.vocab[i] for i in r["response_ids"]]
        assert all(0 <= h <= math.log(tok.vocab_size) + 1e-5 for h in r["entropies"])
        # the first token's entropy, recomputed from a full forward over the prompt
        ids = torch.tensor([r["prompt_ids"]])
        with torch.no_grad():
            logits = engine.e.state.backend.forward(ids, torch.ones_like(ids), torch.arange(ids.shape[1]).unsqueeze(0))[
                :, -1
            ]
        lp = policy_logprobs(logits, 0.7, None)[0]
        assert r["entropies"][0] == pytest.approx(float(-(lp.exp() * lp).sum()), abs=1e-4)
    # one allowed token: pi puts all its mass there, entropy 0; two equally allowed tokens: <= log 2
    one = engine.call("generate", prompts=GRIDS[:1], allowed=["down"], max_new_tokens=1)
    assert one["responses"][0]["entropies"] == [pytest.approx(0.0, abs=1e-6)]
    assert one["responses"][0]["token_texts"] == ["down"]
    two = engine.call("generate", prompts=GRIDS[:1], allowed=["down", "up"], max_new_tokens=1)
    assert 0 < two["responses"][0]["entropies"][0] <= math.log(2) + 1e-6
    scored = engine.call("logprobs", prompts=GRIDS[:1], responses=["down left"])
    assert scored["results"][0]["token_texts"] == ["down", " ", "left"]


def test_shared_prompt_forward_equals_one_forward_per_sample(engine):
    """The tiny backend runs each distinct prompt once (loop-free fast path); the base path runs
    every sample in full. Same log-probs and same gradients, over ragged prompts/responses."""
    from workers.engine.backends import Backend
    from workers.engine.scoring import prepare

    engine.call("init", **tiny_init_params())
    b = engine.e.state.backend
    gen = engine.call("generate", prompts=["S F", GRIDS[0], GRIDS[1], "H"], n=3, max_new_tokens=5, seed=2)
    prompts = [r["prompt_ids"] for r in gen["responses"]]
    responses = [r["response_ids"] for r in gen["responses"]]
    ragged = [[1] * len(x) if i % 4 else [0] + [1] * (len(x) - 1) for i, x in enumerate(responses)]
    # only each response's first token scored (one-move actions, the forced letters dropped):
    # the fast path skips the forward of the later tokens
    first_only = [[1] + [0] * (len(x) - 1) for x in responses]
    assert max(len(x) for x in responses) > 1
    for masks in (ragged, first_only):
        prep = prepare(b, prompts, responses, [None] * len(prompts), masks)
        idx = torch.tensor([0, 1, 4, 6, 7, 9, 11])
        r, c = prep.keep[idx].nonzero(as_tuple=True)
        grads = []
        for fn in (b.response_logits, lambda *a, **k: Backend.response_logits(b, *a, **k)):
            b.model.zero_grad()
            out = fn(prep, idx, r, c)
            out.logsumexp(-1).sum().backward()
            grads.append((out.detach(), [p.grad.clone() for p in b.model.parameters()]))
        assert torch.allclose(grads[0][0], grads[1][0], atol=1e-5)
        for g0, g1 in zip(grads[0][1], grads[1][1]):
            assert torch.allclose(g0, g1, atol=1e-5)


def test_sampling_options(engine):
    engine.call("init", **tiny_init_params())
    a = engine.call("generate", prompts=GRIDS, max_new_tokens=5, seed=7)
    b = engine.call("generate", prompts=GRIDS, max_new_tokens=5, seed=7)
    assert a["responses"] == b["responses"]  # a request seed is reproducible
    g1 = engine.call("generate", prompts=GRIDS, max_new_tokens=5, greedy=True)
    g2 = engine.call("generate", prompts=GRIDS, max_new_tokens=5, temperature=0)
    assert [r["response_ids"] for r in g1["responses"]] == [r["response_ids"] for r in g2["responses"]]
    # top-p small keeps only the most likely token: same tokens as greedy
    tp = engine.call("generate", prompts=GRIDS, max_new_tokens=5, top_p=1e-6)
    assert [r["response_ids"] for r in tp["responses"]] == [r["response_ids"] for r in g1["responses"]]
    # stop strings end the sample and cut the text before the stop string
    stop = engine.call("generate", prompts=GRIDS, n=4, max_new_tokens=20, stop=[" "], seed=1)
    for r in stop["responses"]:
        if r["finish_reason"] == "stop":
            assert " " not in r["text"]
            assert engine.e.state.backend.tokenizer.decode(r["response_ids"]).startswith(r["text"] + " ")
    assert any(r["finish_reason"] == "stop" for r in stop["responses"])


def test_context_length_is_enforced(engine):
    engine.call("init", **tiny_init_params())
    with pytest.raises(InvalidRequest, match="context length"):
        engine.call("generate", prompts=GRIDS, max_new_tokens=60)


def test_update_learns_a_preference(engine):
    """Positive advantage on "left", negative on the rest: P(left) rises."""
    engine.call("init", **tiny_init_params(optimizer={"lr": 3e-3}))

    def p_left():
        r = engine.call("logprobs", prompts=GRIDS, responses=["left"] * 3, allowed=ACTIONS)["results"]
        return float(np.mean([np.exp(x["sum"]) for x in r]))

    before = p_left()
    for _ in range(10):
        gen = engine.call("generate", prompts=GRIDS, n=8, allowed=ACTIONS)
        samples = [
            {
                "prompt_ids": r["prompt_ids"],
                "response_ids": r["response_ids"],
                "old_logprobs": r["logprobs"],
                "advantages": 1.0 if r["text"] == "left" else -0.3,
            }
            for r in gen["responses"]
        ]
        engine.call("update", samples=samples, epochs=2, allowed=ACTIONS)
    assert p_left() > before + 0.3


def test_update_mask_and_seq_mean(engine):
    engine.call("init", **tiny_init_params())
    gen = engine.call("generate", prompts=GRIDS, max_new_tokens=4, seed=0)
    samples = [
        {
            "prompt_ids": r["prompt_ids"],
            "response_ids": r["response_ids"],
            "advantages": [1.0] * len(r["response_ids"]),
            "mask": [1] + [0] * (len(r["response_ids"]) - 1),
        }
        for r in gen["responses"]
    ]
    m = engine.call("update", samples=samples, loss_agg_mode="seq-mean-token-mean")["metrics"]
    assert m["perf/num_tokens"] == 3  # one trained token per sample
    assert m["losses/pg_loss"] == pytest.approx(-1.0, abs=1e-6)  # ratio 1 (old = current), A = 1


def test_update_skips_tokens_forced_by_allowed(engine):
    """After "l" only "eft" can follow "left": those tokens have log pi = 0 and no gradient, so
    they are not trained tokens (token-mean is over real choices)."""
    engine.call("init", **tiny_init_params(tokenizer={"kind": "char"}))
    gen = engine.call("generate", prompts=["S F"], n=4, allowed=ACTIONS)
    for r in gen["responses"]:
        assert len(r["response_ids"]) == len(r["text"]) and r["logprobs"][1:] == pytest.approx(
            [0.0] * (len(r["text"]) - 1)
        )
    samples = [
        {
            "prompt_ids": r["prompt_ids"],
            "response_ids": r["response_ids"],
            "old_logprobs": r["logprobs"],
            "advantages": 1.0,
        }
        for r in gen["responses"]
    ]
    m = engine.call("update", samples=samples, allowed=ACTIONS)["metrics"]
    assert m["perf/num_tokens"] == 4
    assert m["losses/pg_loss"] == pytest.approx(-1.0, abs=1e-6)


def test_update_rejects_tokens_outside_allowed(engine):
    engine.call("init", **tiny_init_params())
    tok = engine.e.state.backend.tokenizer
    s = {"prompt_ids": [1] + tok.encode("S F"), "response_ids": tok.encode("F"), "advantages": 1.0}
    with pytest.raises(InvalidRequest, match="allowed"):
        engine.call("update", samples=[s], allowed=ACTIONS)


def test_save_load_in_process_identical(engine, tmp_path):
    engine.call("init", **tiny_init_params(kl_coef=0.1))
    gen = engine.call("generate", prompts=GRIDS, n=2, max_new_tokens=3)
    samples = [
        {"prompt_ids": r["prompt_ids"], "response_ids": r["response_ids"], "advantages": 1.0} for r in gen["responses"]
    ]
    engine.call("update", samples=samples)
    engine.call("save", path=str(tmp_path / "ck"))
    engine.call("save", path=str(tmp_path / "ck"))  # overwriting a checkpoint is fine
    with pytest.raises(InvalidRequest, match="not an engine checkpoint"):
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "keep.txt").write_text("x")
        engine.call("save", path=str(tmp_path / "other"))

    from workers.engine.engine import Engine
    from workers.engine.protocol import Params

    other = Engine()
    other.dispatch("load", Params({"path": str(tmp_path / "ck")}))
    # the next update and the next sample agree exactly (weights, optimizer and RNG restored)
    u1 = engine.call("update", samples=samples, epochs=2, minibatch_size=3)
    u2 = other.dispatch("update", Params({"samples": samples, "epochs": 2, "minibatch_size": 3}))
    for k in ("losses/loss", "losses/kl", "losses/grad_norm"):
        assert u1["metrics"][k] == u2["metrics"][k]
    g1 = engine.call("generate", prompts=GRIDS, max_new_tokens=4)
    g2 = other.dispatch("generate", Params({"prompts": GRIDS, "max_new_tokens": 4}))
    assert g1["responses"] == g2["responses"]


def test_load_keeps_a_fresh_sampling_rng_when_the_saved_one_does_not_fit(engine, tmp_path, caplog):
    """A checkpoint saved on another device type holds a sampling RNG state this generator cannot
    take: load warns and keeps the freshly seeded generator rather than failing."""
    engine.call("init", **tiny_init_params())
    engine.call("save", path=str(tmp_path / "ck"))
    rng = torch.load(tmp_path / "ck" / "rng.pt", weights_only=True)
    rng["sample"] = torch.zeros(8, dtype=torch.uint8)  # not a CPU generator's state
    torch.save(rng, tmp_path / "ck" / "rng.pt")
    with caplog.at_level(logging.WARNING, logger="turnlens.engine"):
        info = engine.call("load", path=str(tmp_path / "ck"))
    assert info["initialized"] is True
    assert "sampling RNG state not restored" in caplog.text
    assert engine.call("generate", prompts=GRIDS[:1], max_new_tokens=2)["responses"]


def test_onnx_export_without_onnxruntime_is_not_verified(engine, tmp_path, monkeypatch, caplog):
    """verify needs onnxruntime; without it the export still succeeds, unverified, with a warning."""
    engine.call("init", **tiny_init_params())
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` raises ImportError
    with caplog.at_level(logging.WARNING, logger="turnlens.engine"):
        res = engine.call("export_onnx", path=str(tmp_path / "policy.onnx"))
    assert res["max_abs_diff"] is None and (tmp_path / "policy.onnx").is_file()
    assert "onnxruntime not installed" in caplog.text


def test_onnx_export_matches_torch(engine, tmp_path):
    import json

    import onnx
    import onnxruntime as ort

    engine.call("init", **tiny_init_params())
    res = engine.call("export_onnx", path=str(tmp_path / "policy.onnx"))
    assert res["max_abs_diff"] < 1e-4
    model = onnx.load(str(tmp_path / "policy.onnx"))
    assert any(o.domain in ("", "ai.onnx") and o.version == 17 for o in model.opset_import)
    manifest = json.loads((tmp_path / "policy.json").read_text())
    assert manifest["dynamic_axes"] == ["batch", "sequence"] and manifest["context_length"] == 64
    tok_doc = json.loads((tmp_path / "policy.tokenizer.json").read_text())
    assert tok_doc["vocab"] == engine.e.state.backend.tokenizer.vocab

    # other batch sizes and sequence lengths than the export example (dynamic axes), with padding
    sess = ort.InferenceSession(str(tmp_path / "policy.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    V = engine.e.state.backend.vocab_size
    for B, T in [(1, 1), (3, 23), (5, 64)]:
        ids = rng.integers(4, V, (B, T)).astype(np.int64)
        mask = np.ones((B, T), dtype=np.int64)
        mask[0, : T // 2] = 0
        (logits,) = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask})
        with torch.no_grad():
            ref = engine.e.state.backend.model(torch.from_numpy(ids), key_mask=torch.from_numpy(mask)).numpy()
        assert logits.shape == (B, T, V)
        assert np.abs(logits - ref)[mask.astype(bool)].max() < 1e-4


def test_throughput_calibration_batch(engine):
    """A fixed calibration batch: 16 tasks x G=16, one action token, 2 epochs. Loose bound."""
    import time

    engine.call("init", **tiny_init_params(tiny={"n_layer": 2, "n_head": 4, "d_model": 64, "context_length": 64}))
    rng = random.Random(0)
    prompts = ["".join(rng.choice("SFHG") for _ in range(4)) + "\n" + GRIDS[0] for _ in range(16)]
    gen = engine.call("generate", prompts=prompts, n=16, allowed=ACTIONS)
    samples = [
        {
            "prompt_ids": r["prompt_ids"],
            "response_ids": r["response_ids"],
            "old_logprobs": r["logprobs"],
            "advantages": rng.gauss(0, 1),
        }
        for r in gen["responses"]
    ]
    t0 = time.perf_counter()
    m = engine.call("update", samples=samples, epochs=2, minibatch_size=512, allowed=ACTIONS)["metrics"]
    assert m["perf/num_samples"] == 256
    assert time.perf_counter() - t0 < 10.0  # ~0.2 s on an idle 2-core machine; shared CI is slower
