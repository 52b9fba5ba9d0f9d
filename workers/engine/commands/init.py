"""init: a fresh policy from the request (model, tokenizer, LoRA, optimizer)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..config import completed
from ..errors import InvalidRequest
from ..protocol import shown
from ..protocol_types import InfoResult, InitLora, InitParams, InitTokenizer
from ..state import EngineState
from ..tokenizer import HFTokenizer, TinyTokenizer, TokenizerError


def run(state: EngineState, q: InitParams) -> InfoResult:
    cfg = read_config(q)
    corpus = q.tokenizer.corpus if q.tokenizer else None
    try:
        tokenizer = _build_tokenizer(cfg, corpus)
    except TokenizerError as e:
        raise InvalidRequest(f"params.tokenizer: {e}") from None
    state.setup(cfg, tokenizer)
    return state.info()


def read_config(q: InitParams) -> InitParams:
    """The request as the engine keeps it (config.completed). Types, ranges and choices passed the schema; what is checked
    here depends on the model, which a schema of one field cannot say: the tokenizer kinds, the
    HF-only fields."""
    is_tiny = q.model == "tiny"
    tok = q.tokenizer or InitTokenizer()
    kinds = ("word", "char") if is_tiny else ("hf",)
    if tok.kind is not None and tok.kind not in kinds:
        model = "the tiny model" if is_tiny else "a Hugging Face model"
        raise InvalidRequest(
            f"params.tokenizer.kind: expected one of {', '.join(map(shown, kinds))} for {model}, got {shown(tok.kind)}"
        )
    if is_tiny:
        for name in ("path", "chat_template"):
            if getattr(tok, name) is not None:
                raise InvalidRequest(f"params.tokenizer.{name}: applies to Hugging Face models only")
        if q.lora is not None:
            raise InvalidRequest("params.lora: LoRA applies to Hugging Face models only")
    if q.adapter is not None:
        q = _with_adapter(q, is_tiny)
    return completed(q, tok.kind or kinds[0])


def _with_adapter(q: InitParams, is_tiny: bool) -> InitParams:
    """A saved adapter's rank, alpha and target modules as the `lora` the engine keeps (its
    weights are loaded by the backend from `adapter`)."""
    if is_tiny:
        raise InvalidRequest("params.adapter: a LoRA adapter applies to Hugging Face models only")
    if q.lora is not None:
        raise InvalidRequest("params.adapter: give lora (a new adapter to train) or adapter (a saved one), not both")
    config_file = Path(q.adapter) / "adapter_config.json"
    if not config_file.is_file():
        raise InvalidRequest(f"params.adapter: {q.adapter!r} has no adapter_config.json (not a peft adapter directory)")
    a = json.loads(config_file.read_text())
    targets = a.get("target_modules") or "all-linear"
    lora = InitLora(
        r=int(a.get("r", 8)),
        alpha=float(a.get("lora_alpha", 16)),
        target_modules=targets if isinstance(targets, str) else sorted(targets),
    )
    return dataclasses.replace(q, lora=lora)


def _build_tokenizer(cfg: InitParams, corpus: list[str] | None):
    if cfg.model == "tiny":
        return TinyTokenizer.build(cfg.tokenizer.kind, corpus)
    path = cfg.tokenizer.path or cfg.model
    if not Path(path).is_dir():
        raise InvalidRequest(f'params.model: {cfg.model!r} is neither "tiny" nor a local directory')
    return HFTokenizer(path, cfg.tokenizer.chat_template)
