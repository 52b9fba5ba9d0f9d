"""save / load: a checkpoint directory with weights, tokenizer, optimizer, RNG and the InitConfig."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ..config import InitConfig
from ..protocol import PROTOCOL_VERSION, InvalidRequest, Params
from ..tokenizer import HFTokenizer, TinyTokenizer

if TYPE_CHECKING:
    from ..engine import Engine


CHECKPOINT_FORMAT = "turnlens-engine-checkpoint"
CHECKPOINT_VERSION = 1


def save(engine: "Engine", p: Params) -> dict:
    b = engine._require()
    path = Path(p.str("path"))
    p.finish()
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
    torch.save(engine.optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(
        {"sample": engine.gen.get_state(), "shuffle": engine.shuffle_gen.get_state(), "torch": torch.get_rng_state()},
        tmp / "rng.pt",
    )
    meta = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "torch_version": torch.__version__,
        "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "update_steps": engine.update_steps,
        "init": engine.cfg.to_json(),
    }
    (tmp / "engine.json").write_text(json.dumps(meta, indent=1))
    if path.exists():
        old = path.parent / f".{path.name}.old-{os.getpid()}"
        path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old)
    else:
        tmp.rename(path)
    return {"path": str(path), "files": sorted(x.name for x in path.iterdir())}


def load(engine: "Engine", p: Params) -> dict:
    path = Path(p.str("path"))
    device = p.str("device", None, choices=("auto", "cpu", "cuda"))
    threads = p.int("threads", None, min=1)
    p.finish()
    meta_file = path / "engine.json"
    if not meta_file.is_file():
        raise InvalidRequest(f"params.path: {path} is not an engine checkpoint (no engine.json)")
    meta = json.loads(meta_file.read_text())
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise InvalidRequest(f"params.path: {meta_file} is not a {CHECKPOINT_FORMAT}")
    cfg = InitConfig.from_json(meta["init"])
    if device is not None:
        cfg.device = device
    if threads is not None:
        cfg.threads = threads
    if cfg.model == "tiny":
        tokenizer = TinyTokenizer.load(path)
    else:
        tokenizer = HFTokenizer(str(path / "tokenizer"), cfg.chat_template)
    engine._setup(cfg, tokenizer, weights_dir=path)
    dev = engine.backend.device
    engine.optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location=dev, weights_only=True))
    rng = torch.load(path / "rng.pt", weights_only=True)
    try:
        engine.gen.set_state(rng["sample"])
    except RuntimeError:  # saved on another device type: keep the freshly seeded generator
        log.warning("sampling RNG state not restored (saved on another device)")
    engine.shuffle_gen.set_state(rng["shuffle"])
    torch.set_rng_state(rng["torch"])
    engine.update_steps = int(meta.get("update_steps", 0))
    return engine.info()
