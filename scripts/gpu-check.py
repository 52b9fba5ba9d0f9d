#!/usr/bin/env python3
"""Throughput of the training engine on CUDA beside the same work on CPU (scripts/gpu-check.sh).

    python3 scripts/gpu-check.py [--devices cpu,cuda] [--steps 5]

Two short runs per device, driving the engine in process (workers/engine, the same dispatch the
JSON-lines server uses):
  tiny: the tiny transformer (4 layers, d_model 128) on FrozenLake-like grids, 16 tasks x G = 16
        rollouts per step, one action token restricted to the four moves; generate + update
        (PPO-clip, 2 epochs, minibatch 128).
  lora: a small LLaMA-architecture causal LM (4 layers, hidden 256, random weights, tokenizer
        trained here; nothing is downloaded) with a LoRA adapter (r 8 on q/k/v/o), 32 prompts,
        up to 16 new tokens each; generate + update (1 epoch, KL to the base model).
Prints rollouts/s and trained tokens/s per step (median over the timed steps, after one warm-up).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

from workers.engine.engine import Engine  # noqa: E402
from workers.engine.protocol import Params  # noqa: E402

ACTIONS = ["left", "right", "up", "down"]


def grid(rng: random.Random) -> str:
    cells = ["S"] + [rng.choice("FFFFH") for _ in range(14)] + ["G"]
    return "\n".join(" ".join(cells[r * 4:(r + 1) * 4]) for r in range(4))


def build_llama(directory: Path, corpus: list[str]) -> Path:
    """A small LLaMA config with random weights and a byte-level BPE tokenizer trained on `corpus`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<s>", "</s>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.save_pretrained(str(directory))
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(fast), num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, hidden_size=256,
        intermediate_size=512, max_position_embeddings=256, bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id,
    ))
    model.save_pretrained(str(directory))
    return directory


def timed_steps(call, make_prompts, gen_params: dict, upd_params: dict, steps: int, rng: random.Random) -> dict:
    rollouts, tokens, seconds = [], [], []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        g = call("generate", prompts=make_prompts(), **gen_params)
        samples = [{"prompt_ids": r["prompt_ids"], "response_ids": r["response_ids"], "old_logprobs": r["logprobs"],
                    "advantages": rng.gauss(0.0, 1.0)} for r in g["responses"]]
        m = call("update", samples=samples, **upd_params)["metrics"]
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if step > 0:  # the first step warms up kernels and allocators
            rollouts.append(len(samples) / dt)
            tokens.append(m["perf/num_tokens"] / dt)
            seconds.append(dt)
    return {"rollouts/s": statistics.median(rollouts), "tokens/s": statistics.median(tokens),
            "s/step": statistics.median(seconds)}


def run_tiny(device: str, steps: int) -> dict:
    rng = random.Random(0)
    e = Engine()
    call = lambda cmd, **p: e.dispatch(cmd, Params(p))  # noqa: E731
    corpus = [grid(rng) for _ in range(50)] + [" ".join(ACTIONS)]
    call("init", model="tiny", tiny={"n_layer": 4, "n_head": 4, "d_model": 128, "context_length": 64},
         tokenizer={"kind": "word", "corpus": corpus}, device=device, seed=0)
    return timed_steps(call, lambda: [grid(rng) for _ in range(16)],
                       {"n": 16, "allowed": ACTIONS},
                       {"epochs": 2, "minibatch_size": 128, "allowed": ACTIONS}, steps, rng)


def run_lora(device: str, steps: int, model_dir: Path) -> dict:
    rng = random.Random(0)
    e = Engine()
    call = lambda cmd, **p: e.dispatch(cmd, Params(p))  # noqa: E731
    call("init", model=str(model_dir), device=device, seed=0, kl_coef=0.05,
         lora={"r": 8, "alpha": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]})
    return timed_steps(call, lambda: [grid(rng) + "\nMove:" for _ in range(32)],
                       {"n": 1, "max_new_tokens": 16, "temperature": 1.0},
                       {"epochs": 1, "lr": 1e-4}, steps, rng)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="cpu,cuda", help="comma-separated: cpu, cuda")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per run (after one warm-up step)")
    args = ap.parse_args()
    devices = [d for d in args.devices.split(",") if d]
    if "cuda" in devices and not torch.cuda.is_available():
        sys.exit("gpu-check: cuda requested but torch.cuda.is_available() is false")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"torch {torch.__version__}, CUDA device: {gpu}, CPU threads: {torch.get_num_threads()}")
    with tempfile.TemporaryDirectory() as tmp:
        rng = random.Random(1)
        model_dir = build_llama(Path(tmp), [grid(rng) for _ in range(200)] + [" ".join(ACTIONS), "Move: left, right, up or down."])
        results = {}
        for device in devices:
            results[("tiny", device)] = run_tiny(device, args.steps)
            results[("lora", device)] = run_lora(device, args.steps, model_dir)
    print(f"{'run':<6} {'device':<6} {'rollouts/s':>11} {'tokens/s':>10} {'s/step':>8}   vs cpu")
    for (run, device), r in results.items():
        base = results.get((run, "cpu"))
        rel = f"{r['rollouts/s'] / base['rollouts/s']:.1f}x" if base and device != "cpu" else ""
        print(f"{run:<6} {device:<6} {r['rollouts/s']:>11.1f} {r['tokens/s']:>10.1f} {r['s/step']:>8.3f}   {rel}")


if __name__ == "__main__":
    main()
