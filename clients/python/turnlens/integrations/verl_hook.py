"""verl's trainers, both advantage hooks: `hook_compute_advantage` installs the legacy trainer's
(verl_legacy) and the v1 trainer's (verl_v1) wrappers and holds the settings they read.
"""

import threading
from typing import Any, Dict

from .verl_legacy import _legacy_wrapper
from .verl_v1 import _v1_wrapper

# The installed hook's settings (run, config, tokenizer, every); empty when none is installed. The
# wrappers read it, so installing again replaces the settings and never wraps twice.
_hook: Dict[str, Any] = {}
# Set while the v1 trainer's advantage step runs: the ray_trainer.compute_advantage it reaches (through
# v1/utils.py, which may have bound the wrapper) is logged by the v1 hook, not again by the legacy one.
_local = threading.local()


def _patch(owner: Any, name: str, make: Any) -> None:
    cur = getattr(owner, name)
    if getattr(cur, "_turnlens_orig", None) is None:
        wrapper = make(cur)
        wrapper._turnlens_orig = cur
        setattr(owner, name, wrapper)


def _unpatch(owner: Any, name: str) -> None:
    orig = getattr(getattr(owner, name, None), "_turnlens_orig", None)
    if orig is not None:
        setattr(owner, name, orig)


def hook_compute_advantage(run: Any, config: Any = None, tokenizer: Any = None, every: int = 1) -> Any:
    """Logs every training step verl's trainer passes through its advantage step, without editing the trainer.

    The v1 trainer (`trainer.use_v1`, verl's default): wraps `PPOTrainer._compute_advantage`; after it,
    the batch is read back from the trainer's TransferQueue and logged at the trainer's `global_steps`
    (a resumed trainer continues its numbering; resume the TurnLens run with `turnlens.init(resume=...)`),
    with prompt and response text (the trainer's tokenizer) and token ids, one trajectory per session.
    The legacy RayPPOTrainer: wraps `verl.trainer.ppo.ray_trainer.compute_advantage`, which its fit calls
    by that name; the step is the batch's meta_info["global_steps"] when present, else counted from 1.
    config, tokenizer: default to the v1 trainer's own; for the legacy trainer without config the
      estimator is read from the call's arguments (enough for verl; verl-agent's invalid-action
      penalty is not among them: pass config there).
    every: log the steps divisible by it.
    Installing again replaces the run and settings (each step is still logged once); logging never
    raises into the trainer (a step it cannot log is warned about and dropped). Call it in the process
    that runs `fit` (verl's TaskRunner). Returns a function that undoes it."""
    import importlib

    _hook.update(run=run, config=config, tokenizer=tokenizer, every=max(1, int(every)), calls=_hook.get("calls", 0))
    ray_trainer = importlib.import_module("verl.trainer.ppo.ray_trainer")
    _patch(ray_trainer, "compute_advantage", lambda cur: _legacy_wrapper(cur, _hook, _local))
    try:
        v1 = importlib.import_module("verl.trainer.ppo.v1.trainer_base")
    except ImportError:  # verl without the v1 trainer, or without its TransferQueue
        v1 = None
    if v1 is not None:
        _patch(v1.PPOTrainer, "_compute_advantage", lambda cur: _v1_wrapper(cur, _hook, _local))

    def restore() -> None:
        _hook.clear()
        _unpatch(ray_trainer, "compute_advantage")
        if v1 is not None:
            _unpatch(v1.PPOTrainer, "_compute_advantage")

    return restore
