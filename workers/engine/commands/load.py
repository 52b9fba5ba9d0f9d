"""load: a checkpoint written by save; the policy, optimizer and RNG continue exactly where they were."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from ..config import CHECKPOINT_FORMAT, from_checkpoint
from ..errors import InvalidRequest
from ..protocol_types import InfoResult, LoadParams
from ..state import EngineState
from ..tokenizer import HFTokenizer, TinyTokenizer

log = logging.getLogger("turnlens.engine")


def run(state: EngineState, q: LoadParams) -> InfoResult:
    path = Path(q.path)
    meta_file = path / "engine.json"
    if not meta_file.is_file():
        raise InvalidRequest(f"params.path: {path} is not an engine checkpoint (no engine.json)")
    meta = json.loads(meta_file.read_text())
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise InvalidRequest(f"params.path: {meta_file} is not a {CHECKPOINT_FORMAT}")
    cfg = from_checkpoint(meta["init"])
    if q.device is not None:
        cfg.device = q.device
    if q.threads is not None:
        cfg.threads = q.threads
    if cfg.model == "tiny":
        tokenizer = TinyTokenizer.load(path)
    else:
        tokenizer = HFTokenizer(str(path / "tokenizer"), cfg.tokenizer.chat_template)
    state.setup(cfg, tokenizer, weights_dir=path)
    dev = state.backend.device
    state.optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location=dev, weights_only=True))
    rng = torch.load(path / "rng.pt", weights_only=True)
    try:
        state.gen.set_state(rng["sample"])
    except RuntimeError:  # saved on another device type: keep the freshly seeded generator
        log.warning("sampling RNG state not restored (saved on another device)")
    state.shuffle_gen.set_state(rng["shuffle"])
    torch.set_rng_state(rng["torch"])
    state.update_steps = int(meta.get("update_steps", 0))
    return state.info()
