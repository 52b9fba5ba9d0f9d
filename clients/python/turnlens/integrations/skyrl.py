"""SkyRL: a training callback that logs every step's batch to a TurnLens run.

    import turnlens
    from turnlens.integrations.skyrl import TurnLensSkyRLCallback
    run = turnlens.init(project="swe", name="skyrl-grpo")
    trainer = RayPPOTrainer(cfg, tracker, tokenizer, ..., callbacks=[TurnLensSkyRLCallback(run)])
    # or trainer.add_callback(TurnLensSkyRLCallback(run)) before trainer.train()

It implements SkyRL's `TrainingCallback` events (skyrl/train/utils/callbacks.py; the trainer's
`CallbackHandler` calls each event by name). At `on_step_end` it logs the step's batch at
`trainer.global_step`: one trajectory per row, one turn per run of model tokens (see skyrl_rows.py), with
the prompt and response texts decoded by `trainer.tokenizer`, the token ids and sampling log-probs, each
turn's reward (its tokens' and the environment tokens' after it) and advantage (mean over its tokens).

SkyRL pops `rewards`, `uids` and `is_last_step` from the batch right after
`compute_advantages_and_returns`, and its policy step rescales `advantages` in place for the loss reduction
before `on_step_end` fires. So at `on_train_start` the callback wraps the trainer's
`compute_advantages_and_returns` to keep those three and a copy of the advantages it returned; a callback
added after training started logs from `on_step_end`'s batch alone (groups from
`policy_prompt_boundaries`, rewards 0, the rescaled advantages, labelled "skyrl:<name>").

Estimator: from `trainer.cfg.trainer.algorithm` (see skyrl_rows.training_estimator): `grpo` (epsilon 1e-6,
SkyRL's) or `drgrpo` (grpo_norm_by_std false), `rloo` when every group has two trajectories or more;
otherwise "skyrl:<name>". A batch that cannot be logged is warned about and dropped: the callback never
raises into the trainer.
"""

import warnings
from typing import Any, Dict, Optional

from .skyrl_rows import batch_groups, training_estimator

_EVENTS = ("on_train_end", "on_epoch_start", "on_epoch_end", "on_step_start", "on_eval_start", "on_eval_end",
           "on_save", "on_log")


class TurnLensSkyRLCallback:
    """SkyRL `TrainingCallback` logging each step's batch to `run` (a `turnlens.init` run).

    tokenizer: decodes prompts and responses (default: the trainer's). estimator, params: label every step
    with these instead of the one read from the trainer's config. finish: finish the run at `on_train_end`."""

    def __init__(self, run: Any, tokenizer: Any = None, estimator: Optional[str] = None,
                 params: Optional[Dict[str, Any]] = None, finish: bool = True) -> None:
        self.run = run
        self.tokenizer = tokenizer
        self.estimator = estimator
        self.params = params
        self.finish = finish
        self._captured: Optional[Dict[str, Any]] = None
        self._wrapped: Any = None

    def on_train_start(self, trainer: Any, callback_input: Any, control: Any) -> None:
        try:
            self._wrap(trainer)
        except Exception as e:  # logging must not stop training
            warnings.warn(f"turnlens: cannot see SkyRL's advantage step ({type(e).__name__}: {e}); "
                          "steps are logged from on_step_end's batch", stacklevel=2)

    def _wrap(self, trainer: Any) -> None:
        if self._wrapped is trainer:
            return
        compute = trainer.compute_advantages_and_returns

        def compute_advantages_and_returns(data: Any, *args: Any, **kwargs: Any) -> Any:
            before: Dict[str, Any] = {}
            try:
                meta = data.metadata or {}
                before = {"rewards": data.get("rewards"), "uids": list(meta["uids"]) if "uids" in meta else None,
                          "is_last_step": list(meta["is_last_step"]) if meta.get("is_last_step") is not None else None}
            except Exception:
                before = {}
            out = compute(data, *args, **kwargs)
            try:
                adv = out["advantages"]
                # the policy step replaces batch["advantages"] with the loss-reduction-scaled values
                before["advantages"] = adv.detach().clone() if hasattr(adv, "detach") else adv
                before["batch"] = out
                self._captured = before
            except Exception:
                self._captured = None
            return out

        trainer.compute_advantages_and_returns = compute_advantages_and_returns
        self._wrapped = trainer

    def on_step_end(self, trainer: Any, callback_input: Any, control: Any) -> None:
        step = getattr(callback_input, "global_step", None)
        try:
            batch = callback_input.batch
            if batch is None:
                raise ValueError("on_step_end carried no batch")
            cap = self._captured if self._captured is not None and self._captured.get("batch") is batch else {}
            self._captured = None
            tokenizer = self.tokenizer if self.tokenizer is not None else getattr(trainer, "tokenizer", None)
            groups, facts = batch_groups(batch, tokenizer, rewards=cap.get("rewards"), uids=cap.get("uids"),
                                         is_last_step=cap.get("is_last_step"), advantages=cap.get("advantages"))
            estimator, params = self.estimator, self.params
            if estimator is None:
                estimator, params = training_estimator(getattr(trainer, "cfg", None), facts)
                if not cap and ":" not in estimator:
                    estimator, params = f"skyrl:{estimator}", {"turnlens_params": params, "note": (
                        "Logged from on_step_end's batch: SkyRL has rescaled the advantages for the loss reduction")}
            self.run.log_rollouts(int(step), groups, estimator=estimator, params=params, diagnostics={"skyrl": facts})
        except Exception as e:  # a logging failure must not stop training
            warnings.warn(f"turnlens: the rollouts of SkyRL step {step} were not logged ({type(e).__name__}: {e})", stacklevel=2)

    def on_train_end(self, trainer: Any, callback_input: Any, control: Any) -> None:
        if self.finish:
            try:
                self.run.finish()
            except Exception as e:
                warnings.warn(f"turnlens: finishing the run failed ({type(e).__name__}: {e})", stacklevel=2)


def _noop(self: Any, trainer: Any, callback_input: Any, control: Any) -> None:
    """An event this callback does not use."""


for _name in _EVENTS:
    if not hasattr(TurnLensSkyRLCallback, _name):
        setattr(TurnLensSkyRLCallback, _name, _noop)
