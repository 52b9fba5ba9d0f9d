"""Shared fixtures for the engine tests (run: python -m pytest test/engine -q).

The engine is spawned the way the TypeScript client spawns it: ``python -m workers.engine``
with the repository root as the working directory. Hugging Face models are built here from
random weights with a tokenizer trained here: nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

# Tests marked `gpu` need CUDA; without it they are skipped (see pytest_collection_modifyitems).
# Every other test pins device "cpu", so the suite gives the same results on any machine.

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# A FrozenLake-like corpus: the environments' text is generated, so is the vocabulary.
GRIDS = [
    "S F F H\nF H F F\nF F F H\nH F F G",
    "S F H F\nF F F F\nH F H F\nF F F G",
    "S H F F\nF F F H\nF H F F\nF F F G",
]
ACTIONS = ["left", "right", "up", "down"]
CORPUS = GRIDS + [" ".join(ACTIONS), "Move: left, right, up or down."]


def tiny_init_params(**over) -> dict:
    params = {
        "model": "tiny",
        "tiny": {"n_layer": 2, "n_head": 4, "d_model": 32, "context_length": 64},
        "tokenizer": {"kind": "word", "corpus": CORPUS},
        "seed": 0,
        "threads": 1,
        "device": "cpu",
    }
    params.update(over)
    return params


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped when torch.cuda.is_available() is false)")


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (torch.cuda.is_available() is false)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


class EngineProcess:
    """A real engine subprocess speaking the JSON-lines protocol."""

    def __init__(self, env: dict | None = None):
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workers.engine"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
        )
        self.stderr_lines: list[str] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        self._next_id = 0

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send_raw(self, data: bytes) -> dict:
        """Write raw bytes (one line) and read one response line."""
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return self.read()

    def read(self, timeout: float = 60.0) -> dict:
        result: list[bytes] = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        if not result:
            raise TimeoutError(f"no response within {timeout}s; stderr:\n" + "\n".join(self.stderr_lines[-20:]))
        line = result[0]
        assert line, "engine closed stdout; stderr:\n" + "\n".join(self.stderr_lines[-20:])
        return json.loads(line)  # every stdout line must be JSON

    def call(self, cmd: str, params: dict | None = None, *, ok: bool = True) -> dict:
        self._next_id += 1
        req = {"id": self._next_id, "cmd": cmd}
        if params is not None:
            req["params"] = params
        resp = self.send_raw((json.dumps(req) + "\n").encode())
        assert resp["id"] == self._next_id
        if ok:
            assert resp["ok"], resp
            return resp["result"]
        return resp

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()


@pytest.fixture(scope="module")
def engine_proc():
    proc = EngineProcess()
    yield proc
    proc.close()


@pytest.fixture()
def engine():
    """An in-process engine (same code path as the server, minus the pipe)."""
    from workers.engine.engine import Engine
    from workers.engine.protocol import Params

    class Local:
        def __init__(self):
            self.e = Engine()

        def call(self, cmd, **params):
            return self.e.dispatch(cmd, Params(params))

    return Local()


# ---------------------------------------------------------------------------------------------
# Tiny Hugging Face models, built offline
# ---------------------------------------------------------------------------------------------


def build_hf_model(directory: Path, arch: str) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = CORPUS * 5
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<pad>", "<s>", "</s>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = (
        "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    fast.save_pretrained(str(directory))
    ids = dict(bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id)
    V = len(fast)
    if arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_layer=2, n_head=2, n_embd=32, n_positions=128, **ids))
    else:
        model = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=V,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                hidden_size=32,
                intermediate_size=64,
                max_position_embeddings=128,
                **ids,
            )
        )
    model.save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="session")
def hf_models(tmp_path_factory) -> dict[str, Path]:
    import torch

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("hf")
    return {arch: build_hf_model(root / arch, arch) for arch in ("gpt2", "llama")}
