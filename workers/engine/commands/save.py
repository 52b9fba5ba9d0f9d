"""save: a checkpoint directory with weights, tokenizer, optimizer, RNG and init's params as the engine keeps them."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import torch

from ..config import CHECKPOINT_FORMAT, CHECKPOINT_VERSION, checkpoint_json
from ..errors import InvalidRequest
from ..protocol_types import PROTOCOL_VERSION, SaveParams, SaveResult
from ..state import EngineState


def run(state: EngineState, q: SaveParams) -> SaveResult:
    b = state.require()
    path = Path(q.path)
    if path.exists() and not (path.is_dir() and ((path / "engine.json").is_file() or not any(path.iterdir()))):
        raise InvalidRequest(f"params.path: {path} exists and is not an engine checkpoint; refusing to replace it")
    # Write beside the target, then swap: a crash mid-save never leaves a half checkpoint,
    # and no stale file of an older checkpoint survives in the directory.
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    b.save(tmp)
    b.tokenizer.save(tmp)
    torch.save(state.optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(
        {"sample": state.gen.get_state(), "shuffle": state.shuffle_gen.get_state(), "torch": torch.get_rng_state()},
        tmp / "rng.pt",
    )
    meta = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "torch_version": torch.__version__,
        "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "update_steps": state.update_steps,
        "init": checkpoint_json(state.cfg),
    }
    (tmp / "engine.json").write_text(json.dumps(meta, indent=1))
    if path.exists():
        old = path.parent / f".{path.name}.old-{os.getpid()}"
        path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old)
    else:
        tmp.rename(path)
    return SaveResult(path=str(path), files=sorted(x.name for x in path.iterdir()))
