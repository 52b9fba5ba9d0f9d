"""The "tiny" policy: a decoder-only, pre-LN transformer trained from scratch.

After nanoGPT's ``model.py`` (Karpathy), trimmed for RL on short generated text:
learned absolute positions, weight-tied LM head, no dropout (PPO ratios need the behaviour
and the current policy to be the same deterministic function), and a preallocated
KV cache so batched generation of short responses costs one small forward per new token.

Padding: prompts of different lengths are LEFT-padded for generation and sequences are
RIGHT-padded for training; both pass ``key_mask`` (1 = real token) and explicit ``positions``
(the index of the token among the real tokens of its row), so a real token always sees the
same keys at the same positions and both layouts give the same log-probs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .protocol_types import InitTiny

# ---------------------------------------------------------------------------------------------
# Config: init's `tiny` params (their defaults are the protocol's, InitTiny) and the vocab size
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class TinyConfig(InitTiny):
    """init's ``tiny`` shape (its fields and defaults are the protocol's) with the vocab size."""

    vocab_size: int = 0
    """Set from the tokenizer at init; never from the request."""

    @classmethod
    def of(cls, shape: InitTiny, vocab_size: int) -> TinyConfig:
        return cls(**asdict(shape), vocab_size=vocab_size)

    def validate(self) -> None:
        for name in ("n_layer", "n_head", "d_model", "context_length", "vocab_size", "mlp_ratio"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"model.{name} must be >= 1")
        if self.d_model % self.n_head != 0:
            raise ValueError(f"model.d_model ({self.d_model}) must be divisible by model.n_head ({self.n_head})")

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# KV cache
# ---------------------------------------------------------------------------------------------


class KVCache:
    """Preallocated keys/values for every layer: (n_layer, B, nh, T_max, hs) each."""

    def __init__(self, cfg: TinyConfig, batch: int, max_len: int, device, dtype):
        hs = cfg.d_model // cfg.n_head
        shape = (cfg.n_layer, batch, cfg.n_head, max_len, hs)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.length = 0  # number of positions filled so far

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's (B, nh, T, hs) keys/values; return all keys/values so far."""
        t0, t1 = self.length, self.length + k.size(2)
        self.k[layer, :, :, t0:t1] = k
        self.v[layer, :, :, t0:t1] = v
        return self.k[layer, :, :, :t1], self.v[layer, :, :, :t1]


class ListCache:
    """Autograd-friendly cache for training: per-layer keys/values joined with torch.cat.

    Used to run a prompt shared by several samples once and its responses on top of it
    (``select`` repeats the prompt's keys/values for each sample; gradients flow back)."""

    def __init__(self, n_layer: int):
        self.k: list[torch.Tensor | None] = [None] * n_layer  # each (B, nh, T, hs)
        self.v: list[torch.Tensor | None] = [None] * n_layer
        self.length = 0

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.k[layer] is not None:
            k = torch.cat([self.k[layer], k], dim=2)  # (B, nh, T_past + T, hs)
            v = torch.cat([self.v[layer], v], dim=2)
        self.k[layer], self.v[layer] = k, v
        return k, v

    def select(self, rows: torch.Tensor) -> "ListCache":
        """A cache whose row i is this cache's row rows[i]."""
        out = ListCache(len(self.k))
        out.k = [k[rows] for k in self.k]
        out.v = [v[rows] for v in self.v]
        out.length = self.length
        return out


# ---------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x, attn_mask, cache: KVCache | ListCache | None, layer: int):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)  # 3 x (B, T, C)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        if cache is not None:
            k, v = cache.append(layer, k, v)  # (B, nh, T_past + T, hs)
        # softmax(q k^T / sqrt(hs) + mask) v  (Vaswani et al. 2017, Eq. 1); attn_mask (B, 1, T, T_k)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.c_proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    """Pre-LN block: x + attn(ln(x)), then x + mlp(ln(x)) (Xiong et al. 2020)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x, attn_mask, cache, layer):
        x = x + self.attn(self.ln_1(x), attn_mask, cache, layer)
        x = x + self.mlp(self.ln_2(x))
        return x


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------


def positions_from_mask(key_mask: torch.Tensor) -> torch.Tensor:
    """(B, T) 0/1 mask -> (B, T) index of each token among its row's real tokens (pads: 0)."""
    return (key_mask.long().cumsum(-1) - 1).clamp(min=0)


class TinyGPT(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.context_length, cfg.d_model)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying (Press & Wolf 2017), as nanoGPT
        self.apply(self._init_weights)
        # GPT-2 scales residual projections by 1/sqrt(2 * n_layer) at init.
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self,
        idx: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        cache: KVCache | ListCache | None = None,
    ) -> torch.Tensor:
        """Logits for every input position.

        idx: (B, T) token ids. key_mask: (B, T_past + T) 1 for real tokens (covers the cached
        prefix too); None = all real. positions: (B, T); None = derived from key_mask.
        Returns (B, T, V) logits. With ``cache`` the new keys/values are appended to it.
        """
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        if key_mask is None:
            key_mask = torch.ones(B, past + T, dtype=torch.long, device=idx.device)
        if positions is None:
            positions = positions_from_mask(key_mask)[:, past:]  # (B, T)
        # Attention mask (B, 1, T, T_k): query i sees key j if j is real and j <= past + i.
        # Every query also sees itself, so a pad row is never all -inf (which would give NaN).
        q_idx = torch.arange(T, device=idx.device).view(T, 1) + past  # (T, 1)
        k_idx = torch.arange(past + T, device=idx.device).view(1, past + T)  # (1, T_k)
        causal = k_idx <= q_idx  # (T, T_k)
        attn_mask = (causal.unsqueeze(0) & key_mask.bool().unsqueeze(1)) | (k_idx == q_idx).unsqueeze(0)
        attn_mask = attn_mask.unsqueeze(1)  # (B, 1, T, T_k)

        x = self.wte(idx) + self.wpe(positions)  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            x = block(x, attn_mask, cache, layer)
        if cache is not None:
            cache.length += T
        x = self.ln_f(x)  # (B, T, C)
        return self.lm_head(x)  # (B, T, V)


class OnnxWrapper(nn.Module):
    """What ``export_onnx`` exports: (input_ids, attention_mask) -> logits, no cache."""

    def __init__(self, model: TinyGPT):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids, key_mask=attention_mask)
