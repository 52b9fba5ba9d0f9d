"""init: a fresh policy from an InitConfig read off the request (model, tokenizer, LoRA, optimizer)."""

from __future__ import annotations

from pathlib import Path

from ..config import InitConfig
from ..errors import InvalidRequest
from ..model import TinyConfig
from ..protocol import Params
from ..schema import protocol_schema
from ..state import EngineState
from ..tokenizer import HFTokenizer, TinyTokenizer, TokenizerError

# LoRA's defaults, written once in the protocol schema
_LORA = {k: s["default"] for k, s in protocol_schema()["params"]["init"]["properties"]["lora"]["properties"].items()}


def run(state: EngineState, p: Params) -> dict:
    cfg = InitConfig()
    cfg.model = p.str("model", "tiny")
    tp = p.obj("tiny")
    tcfg = TinyConfig()
    for name in ("n_layer", "n_head", "d_model", "context_length", "mlp_ratio"):
        setattr(tcfg, name, tp.int(name, getattr(tcfg, name), min=1))
    tp.finish()
    cfg.tiny = tcfg

    kp = p.obj("tokenizer")
    is_tiny = cfg.model == "tiny"
    cfg.tokenizer_kind = kp.str("kind", "word" if is_tiny else "hf", choices=("word", "char") if is_tiny else ("hf",))
    corpus = kp.list("corpus", None)
    if corpus is not None and not all(isinstance(s, str) for s in corpus):
        raise InvalidRequest("params.tokenizer.corpus: expected an array of strings")
    if not is_tiny:
        cfg.tokenizer_path = kp.str("path", None)
        cfg.chat_template = kp.bool("chat_template", None)
    kp.finish()

    if p.has("lora"):
        if is_tiny:
            raise InvalidRequest("params.lora: LoRA applies to Hugging Face models only")
        lp = p.obj("lora")
        tm = lp.raw("target_modules", _LORA["target_modules"])
        if not (isinstance(tm, str) or (isinstance(tm, list) and all(isinstance(x, str) for x in tm))):
            raise InvalidRequest("params.lora.target_modules: expected a string or an array of strings")
        cfg.lora = {
            "r": lp.int("r", _LORA["r"], min=1),
            "alpha": lp.float("alpha", float(_LORA["alpha"]), min=0.0),
            "target_modules": tm,
        }
        lp.finish()
    else:
        p.raw("lora", None)

    op = p.obj("optimizer")
    cfg.lr = op.float("lr", cfg.lr, min=0.0)
    betas = op.list("betas", list(cfg.betas))
    if len(betas) != 2 or not all(
        isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1 for b in betas
    ):
        raise InvalidRequest("params.optimizer.betas: expected two numbers in [0, 1)")
    cfg.betas = (float(betas[0]), float(betas[1]))
    cfg.weight_decay = op.float("weight_decay", cfg.weight_decay, min=0.0)
    cfg.eps = op.float("eps", cfg.eps, min=0.0, min_exclusive=True)
    op.finish()

    cfg.kl_coef = p.float("kl_coef", 0.0, min=0.0)
    cfg.seed = p.int("seed", 0, min=0)
    cfg.device = p.str("device", "auto", choices=("auto", "cpu", "cuda"))
    cfg.threads = p.int("threads", None, min=1)
    p.finish()

    try:
        tokenizer = _build_tokenizer(cfg, corpus)
    except TokenizerError as e:
        raise InvalidRequest(f"params.tokenizer: {e}") from None
    state.setup(cfg, tokenizer)
    return state.info()


def _build_tokenizer(cfg: InitConfig, corpus: list[str] | None):
    if cfg.model == "tiny":
        return TinyTokenizer.build(cfg.tokenizer_kind, corpus)
    path = cfg.tokenizer_path or cfg.model
    if not Path(path).is_dir():
        raise InvalidRequest(f'params.model: {cfg.model!r} is neither "tiny" nor a local directory')
    return HFTokenizer(path, cfg.chat_template)
