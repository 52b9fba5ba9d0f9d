"""The engine: one policy (tiny or Hugging Face) with its tokenizer, optimizer, RNG and an
optional frozen reference, driven by protocol commands.

This module holds the state and what several commands share: set-up from an InitConfig, reading
prompts and ``allowed`` sets, and scoring (used by logprobs and update). Each command lives in
workers/engine/commands/<name>.py as ``run(engine, params) -> result``; ``dispatch`` checks a
request's params against the generated protocol schema (protocol.schema.json) before the command
reads them. See PROTOCOL.md for every field.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import loss as L
from .backends import Backend, HFBackend, ScoreBatch, TinyBackend
from .commands import COMMANDS
from .config import InitConfig, resolve_device
from .model import positions_from_mask
from .protocol import (
    PROTOCOL_VERSION,
    InvalidRequest,
    NotInitialized,
    Params,
    UnknownCommand,
    check_int_list,
    param_defaults,
    validate_params,
)
from .sampling import AllowedAutomaton, CompletionSet, policy_logprobs

log = logging.getLogger("turnlens.engine")

# generate, logprobs and update share one `temperature` field (and default) in the schema
_TEMPERATURE = float(param_defaults("generate")["temperature"])

__all__ = ["Engine", "InitConfig", "configure_logging"]


class Engine:
    def __init__(self) -> None:
        self.backend: Backend | None = None
        self.cfg: InitConfig | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.gen: torch.Generator | None = None  # sampling (on the model's device)
        self.shuffle_gen: torch.Generator | None = None  # minibatch order (CPU)
        self.update_steps = 0  # optimizer steps taken so far
        self.stop_requested = False

    # -----------------------------------------------------------------------------------------
    # Dispatch
    # -----------------------------------------------------------------------------------------

    COMMANDS = tuple(COMMANDS)

    def dispatch(self, cmd: str, p: Params) -> dict:
        if cmd not in COMMANDS:
            raise UnknownCommand(f"unknown command {cmd!r} (known: {', '.join(COMMANDS)})")
        validate_params(cmd, p.data)  # the generated schema: types, ranges, unknown fields
        return COMMANDS[cmd](self, p)

    def _require(self) -> Backend:
        if self.backend is None:
            raise NotInitialized("no model loaded: send init or load first")
        return self.backend

    def info(self) -> dict:
        out: dict[str, Any] = {
            "protocol_version": PROTOCOL_VERSION,
            "initialized": self.backend is not None,
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "cuda_available": torch.cuda.is_available(),
            "threads": torch.get_num_threads(),
            "pid": os.getpid(),
        }
        b = self.backend
        if b is None:
            return out
        total, trainable = b.num_params()
        out.update(
            {
                "model": self.cfg.model,
                "model_kind": b.kind,
                "device": str(b.device),
                "precision": b.precision,
                "num_params": total,
                "trainable_params": trainable,
                "vocab_size": b.vocab_size,
                "context_length": b.context_length,
                "tokenizer_kind": self.cfg.tokenizer_kind,
                "eos_id": b.tokenizer.eos_id,
                "pad_id": b.tokenizer.pad_id,
                "has_reference": b.has_reference,
                "lora": self.cfg.lora is not None,
                "lr": self.optimizer.param_groups[0]["lr"],
                "update_steps": self.update_steps,
                "seed": self.cfg.seed,
            }
        )
        if b.kind == "tiny":
            out["tiny"] = self.cfg.tiny.to_dict()
        return out

    def _setup(self, cfg: InitConfig, tokenizer, weights_dir: Path | None = None) -> None:
        """Build backend, optimizer and generators from a config (init, or load with weights)."""
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        device = resolve_device(cfg.device)
        torch.manual_seed(cfg.seed)
        with_ref = cfg.kl_coef > 0
        if cfg.model == "tiny":
            cfg.tiny.vocab_size = tokenizer.vocab_size
            try:
                cfg.tiny.validate()
            except ValueError as e:
                raise InvalidRequest(f"params.tiny: {e}") from None
            backend: Backend = TinyBackend(cfg.tiny, tokenizer, device, with_ref)
            if weights_dir is not None:
                backend.load(weights_dir)
        else:
            weights = str(weights_dir / "model") if weights_dir is not None else None
            backend = HFBackend(cfg.model, tokenizer, device, with_ref and weights_dir is None, cfg.lora, weights)
            if weights_dir is not None:
                backend.with_reference = with_ref
                if with_ref:
                    backend.load_reference(weights_dir)
        self.backend = backend
        self.cfg = cfg
        self.optimizer = torch.optim.AdamW(
            backend.trainable_parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay, eps=cfg.eps
        )
        self.gen = torch.Generator(device=device).manual_seed(cfg.seed)
        self.shuffle_gen = torch.Generator().manual_seed(cfg.seed + 1)
        self.update_steps = 0
        total, trainable = backend.num_params()
        log.info("model %s on %s (%s): %d params (%d trainable), vocab %d", cfg.model, device,
                 backend.precision, total, trainable, backend.vocab_size)

    # -----------------------------------------------------------------------------------------
    # Prompts and allowed completions
    # -----------------------------------------------------------------------------------------

    def _read_prompts(self, p: Params) -> list[list[int]]:
        b = self._require()
        has_text, has_ids = p.has("prompts"), p.has("prompt_ids")
        if has_text == has_ids:
            p.raw("prompts", None), p.raw("prompt_ids", None)
            raise InvalidRequest("params: give exactly one of prompts (text or chat messages) or prompt_ids")
        p.raw("prompts", None), p.raw("prompt_ids", None)  # both are known fields
        if has_ids:
            raw = p.list("prompt_ids")
            return [self._check_ids(x, f"params.prompt_ids[{i}]", nonempty=True) for i, x in enumerate(raw)]
        out = []
        for i, prompt in enumerate(p.list("prompts")):
            where = f"params.prompts[{i}]"
            if isinstance(prompt, list):
                for j, m in enumerate(prompt):
                    if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                        raise InvalidRequest(f"{where}[{j}]: expected a message {{role: string, content: string}}")
            elif not isinstance(prompt, str):
                raise InvalidRequest(f"{where}: expected a string or an array of chat messages")
            try:
                ids = b.tokenizer.encode_prompt(prompt)
            except TokenizerError as e:
                raise InvalidRequest(f"{where}: {e}") from None
            if not ids:
                raise InvalidRequest(f"{where}: the prompt encodes to no tokens")
            out.append(ids)
        return out

    def _check_ids(self, value: Any, where: str, nonempty: bool = False) -> list[int]:
        ids = check_int_list(value, where, lo=0, hi=self.backend.vocab_size)
        if nonempty and not ids:
            raise InvalidRequest(f"{where}: must not be empty")
        return ids

    def _read_completion_set(self, value: Any, where: str) -> CompletionSet:
        """An ``allowed`` set: strings (tokenized without specials), token ids, or id arrays."""
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            raise InvalidRequest(f"{where}: expected a non-empty array of strings, token ids or token-id arrays")
        out: list[list[int]] = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                ids = self.backend.tokenizer.encode(item)
                if not ids:
                    raise InvalidRequest(f"{where}[{i}]: {item!r} encodes to no tokens")
            elif isinstance(item, int) and not isinstance(item, bool):
                ids = self._check_ids([item], f"{where}[{i}]")
            elif isinstance(item, list):
                ids = self._check_ids(item, f"{where}[{i}]", nonempty=True)
            else:
                raise InvalidRequest(f"{where}[{i}]: expected a string, a token id or an array of token ids")
            out.append(ids)
        return out

    def _read_allowed(self, p: Params, n_prompts: int) -> list[CompletionSet]:
        """``allowed`` (one set for every prompt) or ``allowed_per_prompt`` (one per prompt)."""
        if p.has("allowed") and p.has("allowed_per_prompt"):
            raise InvalidRequest("params: give at most one of allowed and allowed_per_prompt")
        if p.has("allowed"):
            s = self._read_completion_set(p.raw("allowed"), "params.allowed")
            p.raw("allowed_per_prompt", None)
            return [s] * n_prompts
        per = p.list("allowed_per_prompt", None)
        p.raw("allowed", None)
        if per is None:
            return [None] * n_prompts
        if len(per) != n_prompts:
            raise InvalidRequest(f"params.allowed_per_prompt: expected {n_prompts} entries (one per prompt), got {len(per)}")
        return [self._read_completion_set(x, f"params.allowed_per_prompt[{i}]") for i, x in enumerate(per)]

    def _automaton(self, sets: list[CompletionSet]) -> AllowedAutomaton:
        b = self.backend
        try:
            return AllowedAutomaton(sets, b.vocab_size, b.tokenizer.eos_id, b.device)
        except ValueError as e:
            raise InvalidRequest(f"params.{e}") from None

    @staticmethod
    def _read_temperature(p: Params) -> tuple[float, bool]:
        """temperature 0 means greedy, with log-probs reported at T = 1."""
        t = p.float("temperature", _TEMPERATURE, min=0.0)
        return (1.0, True) if t == 0.0 else (t, False)

    # -----------------------------------------------------------------------------------------
    # Scoring: shared by logprobs and update
    # -----------------------------------------------------------------------------------------

    def _prepare(
        self, prompts: list[list[int]], responses: list[list[int]], sets: list[CompletionSet],
        token_masks: list[list[int] | None] | None = None, drop_forced: bool = False,
    ) -> ScoreBatch:
        """Right-pad prompt + response into tensors; the per-sample Python here is data layout
        (numpy slices), the model never sees a per-sample loop."""
        b = self.backend
        dev = b.device
        S = len(prompts)
        # samples that share a prompt (GRPO's G rollouts of one task) share one prompt forward
        group_of: dict[tuple, int] = {}
        groups = np.array([group_of.setdefault(tuple(x), len(group_of)) for x in prompts], dtype=np.int64)
        uniq = [list(k) for k in group_of]
        Tu = max(len(x) for x in uniq)
        u_ids = np.full((len(uniq), Tu), b.tokenizer.pad_id, dtype=np.int64)  # left-padded
        u_mask = np.zeros((len(uniq), Tu), dtype=np.int64)
        for i, x in enumerate(uniq):
            u_ids[i, Tu - len(x):] = x
            u_mask[i, Tu - len(x):] = 1
        lp = np.array([len(x) for x in prompts], dtype=np.int64)
        lr = np.array([len(x) for x in responses], dtype=np.int64)
        total = lp + lr
        T, Lr = int(total.max()), max(int(lr.max()), 1)
        ctx = b.context_length
        if ctx is not None and T > ctx:
            raise InvalidRequest(f"params: a prompt + response of {T} tokens exceeds the context length ({ctx})")
        ids = np.full((S, T), b.tokenizer.pad_id, dtype=np.int64)
        mask = np.zeros((S, T), dtype=np.int64)
        resp = np.full((S, Lr), b.tokenizer.pad_id, dtype=np.int64)
        keep = np.zeros((S, Lr), dtype=bool)
        for i in range(S):
            ids[i, : lp[i]] = prompts[i]
            ids[i, lp[i]: total[i]] = responses[i]
            mask[i, : total[i]] = 1
            resp[i, : lr[i]] = responses[i]
            keep[i, : lr[i]] = True if token_masks is None or token_masks[i] is None else np.asarray(token_masks[i], bool)
        t_ids = torch.from_numpy(ids).to(dev)
        t_mask = torch.from_numpy(mask).to(dev)
        t_resp = torch.from_numpy(resp).to(dev)
        t_lr = torch.from_numpy(lr).to(dev)
        auto = self._automaton(sets)
        t_keep = torch.from_numpy(keep).to(dev)
        if auto.restricted:
            states, ok = auto.walk(t_resp, t_lr)  # (S, Lr) each
            if drop_forced:  # a token that was the only allowed choice: log pi = 0, no gradient
                t_keep &= auto.allowed_table.sum(-1)[states] != 1
        else:
            states, ok = None, torch.ones(S, Lr, dtype=torch.bool, device=dev)
        return ScoreBatch(
            ids=t_ids, key_mask=t_mask, positions=positions_from_mask(t_mask),
            total_len=torch.from_numpy(total).to(dev), prompt_len=torch.from_numpy(lp).to(dev),
            resp=t_resp, resp_len=t_lr, keep=t_keep, states=states, ok=ok, auto=auto,
            prompt_group=torch.from_numpy(groups).to(dev), group_ids=torch.from_numpy(u_ids).to(dev),
            group_mask=torch.from_numpy(u_mask).to(dev),
        )

    def _score(
        self, prep: ScoreBatch, idx: torch.Tensor, temperature: float, reference: bool = False,
        with_entropy: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """log pi of the kept response tokens of samples ``idx``.

        Returns logp (N,), entropy (N,) or None, and (r, c): each token's row in ``idx`` and
        column in the response, in row-major order (tokens of a sample are contiguous).
        """
        r, c = prep.keep[idx].nonzero(as_tuple=True)  # (N,), (N,)
        sel = self.backend.response_logits(prep, idx, r, c, reference=reference)  # (N, V)
        mask = prep.auto.allowed_table[prep.states[idx][r, c]] if prep.states is not None else None  # (N, V)
        logp_all = policy_logprobs(sel, temperature, mask)  # (N, V) log pi
        targets = prep.resp[idx][r, c]  # (N,)
        logp = logp_all.gather(1, targets.unsqueeze(1)).squeeze(1)  # (N,)
        ent = L.entropy_from_logprobs(logp_all) if with_entropy else None  # (N,)
        return logp, ent, r, c

    def _score_all(self, prep: ScoreBatch, temperature: float, micro: int, reference: bool = False) -> torch.Tensor:
        """Per-token log-probs of every kept token, as a padded (S, Lr) tensor (no grad)."""
        S, Lr = prep.resp.shape
        out = torch.zeros(S, Lr, dtype=torch.float32, device=prep.resp.device)
        with torch.no_grad():
            for idx in torch.arange(S, device=prep.resp.device).split(micro):
                logp, _, r, c = self._score(prep, idx, temperature, reference=reference)
                out[idx[r], c] = logp
        return out


def configure_logging() -> None:
    level = os.environ.get("TURNLENS_ENGINE_LOG", "INFO").upper()
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level, logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
