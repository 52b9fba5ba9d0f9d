"""One training step's batch -> one `run.log_rollouts` call, labelled with the trainer's estimator: the
conversion of either batch layout (verl-agent's rows per turn, verl's rows per trajectory) and the
sending both advantage hooks use.
"""

import warnings
from typing import Any, Dict, List, Optional, Tuple

from .verl_agent import _agent_groups
from ..shapes import config_value
from .verl_estimator import training_estimator
from .verl_rows import _loop_groups, _parts


def _convert(batch: Any, tokenizer: Any = None, observations: Optional[List[str]] = None,
             actions: Optional[List[str]] = None) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    tensors, nt = _parts(batch)
    if "uid" not in nt:
        raise KeyError("non_tensor_batch['uid'] is missing: this does not look like a verl training batch")
    if "traj_uid" in nt:
        return _agent_groups(tensors, nt, tokenizer, observations, actions)
    return _loop_groups(tensors, nt, tokenizer)


def batch_to_groups(batch: Any, tokenizer: Any = None, observations: Optional[List[str]] = None,
                    actions: Optional[List[str]] = None) -> Dict[str, List[Dict[str, Any]]]:
    """One training batch -> {uid: [trajectory {turns, reward, success}]} for `run.log_rollouts`.

    batch: a verl `DataProto` (or a dict with "batch" and "non_tensor_batch"); verl-agent batches
      (with traj_uid) must carry `mark_rollout`'s marks.
    tokenizer: decodes prompts / responses / tool tokens into observation and action text (optional).
    observations, actions: verl-agent only, per batch row text to store instead (optional).
    Each verl-agent turn keeps its traj_uid (in the turn's info).
    """
    return _convert(batch, tokenizer, observations, actions)[0]


def log_verl_step(run: Any, batch: Any, step: int, tokenizer: Any = None, config: Any = None,
                  estimator: Optional[str] = None, params: Optional[Dict[str, Any]] = None) -> None:
    """Logs one training batch (call it after `compute_advantage`): returns at once.

    config: the trainer's config (`self.config`); labels the step with the estimator and parameters
      the trainer used (see `training_estimator`). estimator/params: given explicitly instead.
    A verl-agent batch must carry `mark_rollout`'s marks; copies `adjust_batch` made are dropped. The
    trainer's statistics counted them: GiGPO (and verl-agent's GRPO, GiGPO with omega 0) gets them as
    `params.rowCopies`, so the recompute still equals what trained; for another estimator such a step
    is labelled "verl-agent:<name>" (the TurnLens estimator that matches the other groups in its params).
    Never raises into the trainer: a batch that cannot be logged is warned about and dropped."""
    try:
        groups, meta = _convert(batch, tokenizer)
        _send(run, step, groups, meta, config, estimator, params)
    except Exception as e:  # a logging failure must not stop training
        _warn_dropped(step, e)


def _warn_dropped(step: Any, e: BaseException) -> None:
    warnings.warn(f"turnlens: the rollouts of step {step} were not logged ({type(e).__name__}: {e})", stacklevel=3)


def _send(run: Any, step: int, groups: Dict[str, List[Dict[str, Any]]], meta: Dict[str, Any], config: Any,
          estimator: Optional[str], params: Optional[Dict[str, Any]]) -> None:
    """Labels converted groups with the trainer's estimator and sends them as one step."""
    diagnostics: Dict[str, Any] = {"verl": {k: v for k, v in meta.items() if k != "copiedGroups"}}
    if config is not None and estimator is None:
        estimator, params = training_estimator(config, meta["layout"])
    if meta.get("multiOutputSessions") and estimator and ":" not in estimator:
        algo = config_value(config, "algorithm") if config_value(config, "algorithm") is not None else config
        name = str(config_value(algo, "adv_estimator", estimator)).lower()
        # only verl's GRPO (not grpo_vectorized, not the others) credits a session by its final output alone
        if name not in ("grpo", "drgrpo"):
            params = {"trainer": {"turnlens_estimator": estimator, "turnlens_params": params},
                      "note": (f"{meta['multiOutputSessions']} sessions have several agent-loop outputs; verl's v1 trainer credits "
                               f"each output as its own sample of the group under {name}, while TurnLens stores a session as one "
                               "trajectory")}
            estimator = f"verl:{name}"
    if meta.get("rewardOnToolTokens") and estimator == "reinforcepp":
        params = {"trainer": {"turnlens_estimator": estimator, "turnlens_params": params},
                  "note": (f"{meta['rewardOnToolTokens']} rows carry their reward on a tool token, which verl's token-level "
                           "return skips; TurnLens counts it in the trajectory score")}
        estimator = f"verl:{estimator}"
    if meta.get("copiedGroups") and estimator == "gigpo":
        # GiGPO counts each copied turn once per copy in its statistics (params.rowCopies), as the trainer did
        diagnostics["verl"]["copiedGroups"] = meta["copiedGroups"]
        params = dict(params or {}, rowCopies=[[uid, ti, k, t["batch_copies"]] for uid, trajs in groups.items()
                                               for ti, traj in enumerate(trajs) for k, t in enumerate(traj["turns"]) if t.get("batch_copies")])
    elif meta.get("copiedGroups") and estimator and ":" not in estimator:
        diagnostics["verl"]["copiedGroups"] = meta["copiedGroups"]
        params = {"trainer": {"turnlens_estimator": estimator, "turnlens_params": params},
                  "note": (f"adjust_batch copied {meta['copiesDropped']} rows (groups {', '.join(meta['copiedGroups'][:5])}"
                           f"{'...' if len(meta['copiedGroups']) > 5 else ''}) and the trainer's group statistics counted the copies; "
                           "the other groups recompute exactly with the TurnLens estimator in trainer.turnlens_estimator")}
        estimator = f"verl-agent:{estimator}"
    run.log_rollouts(step, groups, estimator=estimator, params=params, diagnostics=diagnostics)
