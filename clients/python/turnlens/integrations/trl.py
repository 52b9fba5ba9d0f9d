"""TRL: a `transformers.TrainerCallback` that logs the trainer's metrics to a TurnLens run and,
for GRPO-style trainers, the completions of the latest generation batch grouped by prompt.

    import turnlens
    from turnlens.integrations.trl import TurnLensCallback
    run = turnlens.init(project="gsm8k", name="grpo-qwen", config=training_args.to_dict())
    trainer = GRPOTrainer(model=..., reward_funcs=..., args=training_args, train_dataset=...)
    trainer.add_callback(TurnLensCallback(run, trainer))
    trainer.train()        # the run is finished when training ends

Metrics: every numeric value TRL logs (loss, reward, rewards/<func>/mean, completions/mean_length,
entropy, clip_ratio/..., kl) at the trainer's global step, under train/ (eval_* under eval/).
Completions: GRPOTrainer keeps the latest generation batch in `trainer._logs` (prompt, completion,
rewards per reward function, advantages); each prompt becomes a group (uid = a hash of the
prompt), each completion a one-turn trajectory with reward = the weighted sum of the reward
functions (as GRPO computes it), the advantage GRPO used, and the per-function rewards in info.
"""

import hashlib
import json
import re
from typing import Any, Dict, List, Optional

try:
    from transformers import TrainerCallback
except ImportError as e:  # pragma: no cover - only without transformers
    raise ImportError("turnlens.integrations.trl needs transformers (pip install transformers trl)") from e


def _text(x: Any) -> str:
    """A prompt or completion: plain text, or chat messages joined as `role: content` lines."""
    if isinstance(x, str):
        return x
    if isinstance(x, list) and all(isinstance(m, dict) and "content" in m for m in x):
        return "\n".join(f"{m.get('role', '')}: {m['content'] if isinstance(m['content'], str) else json.dumps(m['content'])}" for m in x)
    return json.dumps(x, default=str)


def _key(k: str) -> str:
    prefix = "eval/" if k.startswith("eval_") else "train/"
    k = k[5:] if k.startswith("eval_") else k
    return (prefix + re.sub(r"[^\w/.-]", "_", k))[:200]


class TurnLensCallback(TrainerCallback):
    """Logs to `run`; pass the trainer (or set `.trainer`) to also log GRPO completions."""

    def __init__(self, run: Any, trainer: Any = None, log_completions: bool = True, finish_on_end: bool = True):
        self.run = run
        self.trainer = trainer
        self.log_completions = log_completions
        self.finish_on_end = finish_on_end
        self._last_rollout_step: Optional[int] = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        step = int(state.global_step)
        values = {_key(k): float(v) for k, v in logs.items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")}
        if values:
            self.run.log(values, step=step)
        if self.log_completions and self.trainer is not None and step != self._last_rollout_step:
            groups = completion_groups(self.trainer)
            if groups:
                self.run.log_rollouts(step, groups, estimator="grpo")
                self._last_rollout_step = step

    def on_train_end(self, args, state, control, **kwargs):
        if self.finish_on_end and state.is_world_process_zero:
            self.run.finish()


def completion_groups(trainer: Any) -> Dict[str, List[Dict[str, Any]]]:
    """The latest generation batch of a GRPO-style trainer as {prompt hash: [one-turn trajectories]}."""
    logs = getattr(trainer, "_logs", None)
    if not logs or not logs.get("prompt"):
        return {}
    prompts, completions = list(logs["prompt"]), list(logs["completion"])
    advantages = list(logs.get("advantages") or [])
    per_func = {name: list(vals) for name, vals in (logs.get("rewards") or {}).items()}
    extra = {name: list(vals) for name, vals in (logs.get("extra") or {}).items()}
    weights = getattr(trainer, "reward_weights", None)
    weights = [float(w) for w in weights.tolist()] if weights is not None and hasattr(weights, "tolist") else [1.0] * len(per_func)
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for i, (p, c) in enumerate(zip(prompts, completions)):
        prompt = _text(p)
        rewards = {name: vals[i] for name, vals in per_func.items() if i < len(vals)}
        finite = [(w, r) for w, r in zip(weights, rewards.values()) if r is not None and r == r]
        reward = sum(w * r for w, r in finite)
        turn: Dict[str, Any] = {"observation": prompt, "action": _text(c), "reward": reward, "done": True,
                                "info": {"rewards": {k: (v if v == v else None) for k, v in rewards.items()},
                                         **{k: v[i] for k, v in extra.items() if i < len(v)}}}
        if i < len(advantages) and advantages[i] == advantages[i]:
            turn["advantage"] = float(advantages[i])
        uid = hashlib.sha1(prompt.encode()).hexdigest()[:16]
        groups.setdefault(uid, []).append({"turns": [turn], "reward": reward})
    return groups
