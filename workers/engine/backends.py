"""Model backends: the tiny from-scratch transformer and local Hugging Face causal LMs.

Both expose the same four operations, so generation, scoring and training never
special-case the model family:

* ``forward(ids, key_mask, positions, reference=False)`` -> (B, T, V) logits, no cache;
* ``new_cache(batch, max_len)`` and ``forward_cached(ids, key_mask, positions, cache)``;
* ``save(dir)`` / ``load(dir)`` of weights (optimizer and RNG are the engine's business).

Dropout stays off (``eval()``) even while training: PPO ratios need the same forward for the
behaviour and the current policy.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from .model import KVCache, ListCache, OnnxWrapper, TinyConfig, TinyGPT
from .sampling import AllowedAutomaton
from .tokenizer import HFTokenizer, TinyTokenizer


@dataclass
class ScoreBatch:
    """(prompt, response) pairs laid out once per command for scoring and training."""

    ids: torch.Tensor  # (S, T) prompt + response, right-padded
    key_mask: torch.Tensor  # (S, T) 1 = real token
    positions: torch.Tensor  # (S, T)
    total_len: torch.Tensor  # (S,) prompt + response length
    prompt_len: torch.Tensor  # (S,)
    resp: torch.Tensor  # (S, Lr) response ids, right-padded
    resp_len: torch.Tensor  # (S,)
    keep: torch.Tensor  # (S, Lr) bool: tokens that are scored / trained
    states: torch.Tensor | None  # (S, Lr) automaton state before each response token
    ok: torch.Tensor  # (S, Lr) bool: token allowed by ``allowed`` (True when unrestricted)
    auto: AllowedAutomaton
    prompt_group: torch.Tensor  # (S,) index of the sample's distinct prompt
    group_ids: torch.Tensor  # (U, Tu) distinct prompts, left-padded
    group_mask: torch.Tensor  # (U, Tu)


class Backend:
    kind: str
    model: nn.Module
    reference: nn.Module | None
    tokenizer: Any
    device: torch.device

    def autocast(self):
        """bf16 autocast on CUDA (weights stay fp32, as the AdamW state); plain fp32 on CPU."""
        if self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @property
    def precision(self) -> str:
        return "bf16-autocast" if self.device.type == "cuda" else "fp32"

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def num_params(self) -> tuple[int, int]:
        params = {id(p): p for p in self.model.parameters()}.values()  # tied weights once
        return sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad)

    @property
    def context_length(self) -> int | None:
        return None

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    @property
    def has_reference(self) -> bool:
        return self.reference is not None

    def prefill(self, ids, key_mask, positions, cache, first_rows: torch.Tensor, inv: torch.Tensor) -> torch.Tensor:
        """Run the left-padded prompts (B, T) into ``cache``; return the last logits (B, V).
        first_rows (u,): one row per distinct prompt; inv (B,): each row's distinct prompt."""
        return self.forward_cached(ids, key_mask, positions, cache)[:, -1]

    def response_logits(
        self, batch: ScoreBatch, idx: torch.Tensor, r: torch.Tensor, c: torch.Tensor, reference: bool = False
    ) -> torch.Tensor:
        """Logits (N, V) that predict response token (idx[r], c), one full forward per row."""
        T = int(batch.total_len[idx].max())
        logits = self.forward(
            batch.ids[idx, :T], batch.key_mask[idx, :T], batch.positions[idx, :T], reference=reference
        )  # (b, T, V)
        cols = batch.prompt_len[idx][r] + c - 1  # the logit at position t predicts token t + 1
        return logits[r, cols]  # (N, V)


# ---------------------------------------------------------------------------------------------
# Tiny
# ---------------------------------------------------------------------------------------------


class TinyBackend(Backend):
    kind = "tiny"

    def __init__(self, cfg: TinyConfig, tokenizer: TinyTokenizer, device: torch.device, with_reference: bool):
        self.tokenizer = tokenizer
        self.device = device
        self.cfg = cfg
        self.model = TinyGPT(cfg).to(device).eval()
        self.reference = None
        if with_reference:
            self.make_reference()

    def make_reference(self) -> None:
        self.reference = copy.deepcopy(self.model).eval()
        self.reference.requires_grad_(False)

    @property
    def context_length(self) -> int:
        return self.cfg.context_length

    @property
    def vocab_size(self) -> int:
        return self.cfg.vocab_size

    def forward(self, ids, key_mask, positions, reference: bool = False) -> torch.Tensor:
        model = self.reference if reference else self.model
        with self.autocast():
            return model(ids, key_mask=key_mask, positions=positions)  # (B, T, V)

    def new_cache(self, batch: int, max_len: int) -> KVCache:
        return KVCache(self.cfg, batch, max_len, self.device, torch.float32)

    def prefill(self, ids, key_mask, positions, cache: KVCache, first_rows: torch.Tensor, inv: torch.Tensor):
        """Each distinct prompt runs once; its keys/values are copied to every row that has it
        (generate's n samples per prompt cost one prompt forward, not n)."""
        if first_rows.numel() == ids.size(0):
            return self.forward_cached(ids, key_mask, positions, cache)[:, -1]
        T = ids.size(1)
        tmp = KVCache(self.cfg, first_rows.numel(), T, self.device, torch.float32)
        with self.autocast():
            logits = self.model(
                ids[first_rows], key_mask=key_mask[first_rows], positions=positions[first_rows], cache=tmp
            )[:, -1]  # (u, V)
        cache.k[:, :, :, :T] = tmp.k[:, inv]  # (n_layer, B, nh, T, hs)
        cache.v[:, :, :, :T] = tmp.v[:, inv]
        cache.length = T
        return logits[inv]  # (B, V)

    def response_logits(
        self, batch: ScoreBatch, idx: torch.Tensor, r: torch.Tensor, c: torch.Tensor, reference: bool = False
    ) -> torch.Tensor:
        """Shared-prompt forward: each distinct prompt of ``idx`` runs once, its keys/values
        are repeated for the samples that share it, and only the responses run per sample.
        With GRPO's G rollouts per task and one-token actions this is ~G times less compute
        than one forward per sample; the result is the same (tested against the base path)."""
        model = self.reference if reference else self.model
        groups, inv = torch.unique(batch.prompt_group[idx], return_inverse=True)  # (u,), (b,)
        p_mask = batch.group_mask[groups]  # (u, Tu)
        Tp = int(p_mask.sum(1).max())
        p_ids, p_mask = batch.group_ids[groups, -Tp:], p_mask[:, -Tp:]  # (u, Tp) left-padded
        cache = ListCache(self.cfg.n_layer)
        with self.autocast():
            first = model(p_ids, key_mask=p_mask, cache=cache)[:, -1]  # (u, V) predicts response token 0
        sel = first[inv[r]]  # (N, V)
        Lr = int(batch.resp_len[idx].max())
        # tokens 1.. of the responses, on top of their prompt's keys/values; skipped when none of
        # them is scored (one-move actions: the letters after the first are forced and dropped)
        if Lr > 1 and bool((c > 0).any()):
            r_in = batch.resp[idx, : Lr - 1]  # (b, Lr - 1)
            r_mask = (torch.arange(Lr - 1, device=r_in.device) < batch.resp_len[idx].unsqueeze(1) - 1).long()
            key_mask = torch.cat([p_mask[inv], r_mask], dim=1)  # (b, Tp + Lr - 1)
            positions = batch.prompt_len[idx].unsqueeze(1) + torch.arange(Lr - 1, device=r_in.device)  # (b, Lr - 1)
            with self.autocast():
                rest = model(r_in, key_mask=key_mask, positions=positions, cache=cache.select(inv))  # (b, Lr-1, V)
            later = rest[r, (c - 1).clamp(min=0)]  # (N, V)
            sel = torch.where((c == 0).unsqueeze(1), sel, later)
        return sel

    def forward_cached(self, ids, key_mask, positions, cache: KVCache) -> torch.Tensor:
        with self.autocast():
            return self.model(ids, key_mask=key_mask, positions=positions, cache=cache)

    def save(self, directory: Path) -> None:
        torch.save(self.model.state_dict(), directory / "model.pt")
        if self.reference is not None:
            torch.save(self.reference.state_dict(), directory / "reference.pt")

    def load(self, directory: Path) -> None:
        self.model.load_state_dict(torch.load(directory / "model.pt", map_location=self.device, weights_only=True))
        if self.reference is not None:  # kept when the checkpoint's kl_coef > 0
            self.reference.load_state_dict(
                torch.load(directory / "reference.pt", map_location=self.device, weights_only=True)
            )

    def onnx_module(self) -> nn.Module:
        return OnnxWrapper(self.model).eval()


# ---------------------------------------------------------------------------------------------
# Hugging Face (local directory; optional LoRA via peft)
# ---------------------------------------------------------------------------------------------


class _HFOnnxWrapper(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, use_cache=False
        ).logits


class HFBackend(Backend):
    kind = "hf"

    def __init__(
        self,
        path: str,
        tokenizer: HFTokenizer,
        device: torch.device,
        with_reference: bool,
        lora: dict | None,
        weights_path: str | None = None,
    ):
        """path: the base model directory. weights_path: a checkpoint's saved model (full
        weights, or the LoRA adapter when ``lora`` is set); None = the base weights."""
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # stderr is the log channel: keep it readable
        self.tokenizer = tokenizer
        self.device = device
        self.path = path
        self.lora = lora
        src = weights_path if (weights_path and not lora) else path
        model = AutoModelForCausalLM.from_pretrained(src, local_files_only=True, dtype=torch.float32)
        if lora:
            from peft import LoraConfig, PeftModel, get_peft_model

            if weights_path:
                model = PeftModel.from_pretrained(model, weights_path, is_trainable=True)
            else:
                model = get_peft_model(
                    model,
                    LoraConfig(
                        r=lora["r"],
                        lora_alpha=lora["alpha"],
                        lora_dropout=0.0,
                        target_modules=lora["target_modules"],
                        task_type="CAUSAL_LM",
                    ),
                )
        self.model = model.to(device).eval()
        self.reference = None
        self.with_reference = with_reference
        if with_reference and not lora:  # with LoRA the reference is the base: adapter disabled
            self.make_reference()

    def make_reference(self, state_dir: str | None = None) -> None:
        if self.lora:
            return
        if state_dir is not None:
            from transformers import AutoModelForCausalLM

            ref = AutoModelForCausalLM.from_pretrained(state_dir, local_files_only=True, dtype=torch.float32)
        else:
            ref = copy.deepcopy(self.model)
        self.reference = ref.to(self.device).eval()
        self.reference.requires_grad_(False)

    @property
    def has_reference(self) -> bool:
        return self.reference is not None or bool(self.lora and self.with_reference)

    @property
    def context_length(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def forward(self, ids, key_mask, positions, reference: bool = False) -> torch.Tensor:
        with self.autocast():
            if reference and self.lora:
                with self.model.disable_adapter():
                    out = self.model(input_ids=ids, attention_mask=key_mask, position_ids=positions, use_cache=False)
            else:
                model = self.reference if reference else self.model
                out = model(input_ids=ids, attention_mask=key_mask, position_ids=positions, use_cache=False)
        return out.logits

    def new_cache(self, batch: int, max_len: int):
        from transformers import DynamicCache

        return DynamicCache()

    def forward_cached(self, ids, key_mask, positions, cache) -> torch.Tensor:
        with self.autocast():
            out = self.model(
                input_ids=ids, attention_mask=key_mask, position_ids=positions, past_key_values=cache, use_cache=True
            )
        return out.logits

    def save(self, directory: Path) -> None:
        self.model.save_pretrained(str(directory / "model"))  # peft: the adapter only
        if self.reference is not None:
            self.reference.save_pretrained(str(directory / "reference"))

    def load_reference(self, directory: Path) -> None:
        if (directory / "reference").exists():
            self.make_reference(str(directory / "reference"))

    def onnx_module(self) -> nn.Module:
        return _HFOnnxWrapper(self.model).eval()
