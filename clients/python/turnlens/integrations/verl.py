"""verl-agent and verl: one training step's batch -> `run.log_rollouts` groups, with the trainer's
estimator and parameters.

Three batch layouts are read:
- verl-agent (github.com/langfengQ/verl-agent): one row per turn of every trajectory; the rollout
  order is marked with `mark_rollout` before verl-agent's fit copies and reorders rows (verl_agent).
- verl (volcengine/verl >= 0.6 agent loop, legacy RayPPOTrainer): one row per trajectory, split into
  turns by response_mask (verl_rows, which holds the row conversion every layout shares).
- verl's v1 trainer (verl 0.9's default): one row per agent-loop output in the trainer's
  TransferQueue; a session's outputs are one trajectory (verl_v1).

`log_verl_step` logs a verl-agent or verl batch the training loop holds (verl_step);
`hook_compute_advantage` logs every step of verl's legacy (verl_legacy) or v1 (verl_v1) trainer
without editing it (verl_hook).

The estimator: pass the trainer's config (`config=self.config`, OmegaConf or dict) and the step is
labelled with TurnLens's equivalent estimator and every one of its parameters, or with
"verl:<name>" / "verl-agent:<name>" and the trainer's settings where TurnLens cannot recompute it
(verl_estimator).
"""

from .verl_agent import MARK_ROW, MARK_TURN, BatchOrderError, mark_rollout
from .verl_estimator import training_estimator
from .verl_hook import hook_compute_advantage
from .verl_step import batch_to_groups, log_verl_step
from .verl_v1 import v1_groups

__all__ = [
    "MARK_ROW",
    "MARK_TURN",
    "BatchOrderError",
    "batch_to_groups",
    "hook_compute_advantage",
    "log_verl_step",
    "mark_rollout",
    "training_estimator",
    "v1_groups",
]
