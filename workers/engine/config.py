"""The engine's configuration: what init sets up and a checkpoint records (engine.json "init")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from .errors import InvalidRequest
from .model import TinyConfig
from .protocol_types import InitOptimizer, InitParams

# engine.json of a checkpoint directory (save writes it, load checks it)
CHECKPOINT_FORMAT = "turnlens-engine-checkpoint"
CHECKPOINT_VERSION = 1


@dataclass
class InitConfig:
    """init's params as the engine keeps them; every default is the protocol's (protocol_types)."""

    model: str = InitParams.model
    """ "tiny" (trained from scratch) or the path of a local Hugging Face causal-LM directory."""
    tiny: TinyConfig = field(default_factory=TinyConfig)
    """Shape of the tiny transformer (ignored for Hugging Face models)."""
    tokenizer_kind: str = "word"
    """tiny: "word" or "char" (vocabulary built from the init corpus); HF: "hf". The protocol's
    default depends on the model (init picks it), so none is written there."""
    tokenizer_path: str | None = None
    """HF only: tokenizer directory (default: the model directory)."""
    chat_template: bool | None = None
    """HF only: wrap string prompts as one user message through the chat template
    (None: when the tokenizer has one). Message-list prompts always use it."""
    lora: dict | None = None
    """HF only: {"r", "alpha", "target_modules"} to train a LoRA adapter (peft). No LoRA dropout:
    the engine runs the model in eval mode (PPO ratios need deterministic forwards)."""
    lr: float = InitOptimizer.lr
    """AdamW learning rate (the calibration prototype used 3e-4)."""
    betas: tuple[float, float] = InitOptimizer.betas
    """AdamW betas (beta2 0.99 as in the calibration prototype)."""
    weight_decay: float = InitOptimizer.weight_decay
    """AdamW decoupled weight decay."""
    eps: float = InitOptimizer.eps
    """AdamW epsilon."""
    kl_coef: float = InitParams.kl_coef
    """Default KL(pi || pi_ref) coefficient of update; > 0 keeps a frozen reference copy."""
    seed: int = InitParams.seed
    """Seeds weights init, sampling and minibatch shuffling."""
    device: str = InitParams.device
    """auto: CUDA (bf16 autocast) when torch.cuda.is_available(), else CPU; or cpu / cuda."""
    threads: int | None = None
    """torch.set_num_threads (None: leave torch's default). 1-2 on the 2-core CPU machines."""

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "InitConfig":
        """A checkpoint's config (engine.json "init"); a field it lacks takes the default above."""
        d = dict(d)
        if "tiny" in d:
            d["tiny"] = TinyConfig(**d["tiny"])
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise InvalidRequest('params.device: "cuda" requested but torch.cuda.is_available() is false')
    return torch.device(name)
