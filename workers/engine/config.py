"""The engine's configuration: what init sets up and a checkpoint records (engine.json "init"),
kept as init's params (the generated InitParams) with every optional part filled in."""

from __future__ import annotations

import dataclasses
import json

import torch

from .errors import InvalidRequest
from .protocol_types import InitOptimizer, InitParams, InitTiny, InitTokenizer

# engine.json of a checkpoint directory (save writes it, load checks it)
CHECKPOINT_FORMAT = "turnlens-engine-checkpoint"
CHECKPOINT_VERSION = 1


def completed(q: InitParams, tokenizer_kind: str) -> InitParams:
    """init's params as the engine keeps them and a checkpoint records them: the tiny shape,
    tokenizer and optimizer filled in (their defaults are the protocol's), the tokenizer's kind
    resolved, its corpus dropped (the vocabulary is saved with the tokenizer)."""
    return dataclasses.replace(
        q,
        tiny=q.tiny or InitTiny(),
        tokenizer=dataclasses.replace(q.tokenizer or InitTokenizer(), kind=tokenizer_kind, corpus=None),
        optimizer=q.optimizer or InitOptimizer(),
    )


def checkpoint_json(cfg: InitParams) -> dict:
    """engine.json's "init": the kept params as JSON."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


# The fields of engine.json's "init" as checkpoints wrote them before it held init's params as
# they are: the tokenizer's and the optimizer's fields at the top level, the tiny shape with its
# vocab size (which the tokenizer gives).
_FLAT_TOKENIZER = {"tokenizer_kind": "kind", "tokenizer_path": "path", "chat_template": "chat_template"}
_FLAT_OPTIMIZER = ("lr", "betas", "weight_decay", "eps")


def from_checkpoint(d: dict) -> InitParams:
    """A checkpoint's kept params (engine.json "init"), of either shape; a field it lacks takes
    the protocol's default."""
    d = dict(d)
    if any(k in d for k in (*_FLAT_TOKENIZER, *_FLAT_OPTIMIZER)):
        d["tokenizer"] = {new: d.pop(old) for old, new in _FLAT_TOKENIZER.items() if old in d}
        d["optimizer"] = {k: d.pop(k) for k in _FLAT_OPTIMIZER if k in d}
    if isinstance(d.get("tiny"), dict):
        d["tiny"] = {k: v for k, v in d["tiny"].items() if k != "vocab_size"}
    return completed(InitParams.from_json(d), (d.get("tokenizer") or {}).get("kind") or "word")


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise InvalidRequest('params.device: "cuda" requested but torch.cuda.is_available() is false')
    return torch.device(name)
