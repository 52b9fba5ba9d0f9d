"""The engine's state: one policy (tiny or Hugging Face) with its tokenizer, optimizer, random
generators and an optional frozen reference. Commands read and change it; it knows nothing of
commands or requests beyond the init params that build it (config.completed).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import platform
from pathlib import Path

import torch

from .backends import Backend, HFBackend, TinyBackend
from .config import resolve_device
from .model import TinyConfig
from .errors import InvalidRequest, NotInitialized
from .protocol_types import PROTOCOL_VERSION, InfoResult, InitParams

log = logging.getLogger("turnlens.engine")


class EngineState:
    def __init__(self) -> None:
        self.backend: Backend | None = None
        self.cfg: InitParams | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.gen: torch.Generator | None = None  # sampling (on the model's device)
        self.shuffle_gen: torch.Generator | None = None  # minibatch order (CPU)
        self.update_steps = 0  # optimizer steps taken so far
        self.stop_requested = False

    def require(self) -> Backend:
        """The loaded policy, or NotInitialized for a command that came before init/load."""
        if self.backend is None:
            raise NotInitialized("no model loaded: send init or load first")
        return self.backend

    def setup(self, cfg: InitParams, tokenizer, weights_dir: Path | None = None) -> None:
        """Build backend, optimizer and generators from a config (init, or load with weights)."""
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        device = resolve_device(cfg.device)
        torch.manual_seed(cfg.seed)
        with_ref = cfg.kl_coef > 0
        if cfg.model == "tiny":
            tiny = TinyConfig.of(cfg.tiny, tokenizer.vocab_size)
            try:
                tiny.validate()
            except ValueError as e:
                raise InvalidRequest(f"params.tiny: {e}") from None
            backend: Backend = TinyBackend(tiny, tokenizer, device, with_ref)
            if weights_dir is not None:
                backend.load(weights_dir)
        else:
            # a checkpoint's saved model, else a saved adapter init was given (its base is cfg.model)
            weights = str(weights_dir / "model") if weights_dir is not None else cfg.adapter
            lora = dataclasses.asdict(cfg.lora) if cfg.lora is not None else None
            backend = HFBackend(cfg.model, tokenizer, device, with_ref and weights_dir is None, lora, weights)
            if weights_dir is not None:
                backend.with_reference = with_ref
                if with_ref:
                    backend.load_reference(weights_dir)
        self.backend = backend
        self.cfg = cfg
        opt = cfg.optimizer
        self.optimizer = torch.optim.AdamW(
            backend.trainable_parameters(), lr=opt.lr, betas=opt.betas, weight_decay=opt.weight_decay, eps=opt.eps
        )
        self.gen = torch.Generator(device=device).manual_seed(cfg.seed)
        self.shuffle_gen = torch.Generator().manual_seed(cfg.seed + 1)
        self.update_steps = 0
        total, trainable = backend.num_params()
        log.info(
            "model %s on %s (%s): %d params (%d trainable), vocab %d",
            cfg.model,
            device,
            backend.precision,
            total,
            trainable,
            backend.vocab_size,
        )

    def info(self) -> InfoResult:
        """The ``info`` result (also what init and load answer)."""
        out = InfoResult(
            protocol_version=PROTOCOL_VERSION,
            initialized=self.backend is not None,
            torch_version=torch.__version__,
            python_version=platform.python_version(),
            cuda_available=torch.cuda.is_available(),
            threads=torch.get_num_threads(),
            pid=os.getpid(),
        )
        b = self.backend
        if b is None:
            return out
        total, trainable = b.num_params()
        out.update(
            model=self.cfg.model,
            model_kind=b.kind,
            device=str(b.device),
            precision=b.precision,
            num_params=total,
            trainable_params=trainable,
            vocab_size=b.vocab_size,
            context_length=b.context_length,
            tokenizer_kind=self.cfg.tokenizer.kind,
            eos_id=b.tokenizer.eos_id,
            pad_id=b.tokenizer.pad_id,
            has_reference=b.has_reference,
            lora=self.cfg.lora is not None,
            lr=self.optimizer.param_groups[0]["lr"],
            update_steps=self.update_steps,
            seed=self.cfg.seed,
        )
        if b.kind == "tiny":
            out["tiny"] = b.cfg.to_dict()
        return out
