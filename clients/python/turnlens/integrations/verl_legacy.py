"""verl's legacy RayPPOTrainer hook: a wrapper of `verl.trainer.ppo.ray_trainer.compute_advantage`,
which the trainer's fit calls by that name; `verl_hook.hook_compute_advantage` installs it.
"""

from typing import Any, Dict

from .verl_step import _warn_dropped, log_verl_step


def _legacy_wrapper(orig: Any, hook: Dict[str, Any], local: Any) -> Any:
    """orig, wrapped: logs its output when a hook is installed (hook: its settings) and the v1 trainer's
    advantage step is not running (local.v1), which logs the step itself."""

    def compute_advantage(data, *args, **kwargs):
        out = orig(data, *args, **kwargs)
        if hook and not getattr(local, "v1", False):
            hook["calls"] += 1
            step = (getattr(out, "meta_info", None) or {}).get("global_steps", hook["calls"])
            try:
                if int(step) % hook["every"] == 0:
                    cfg = hook["config"] if hook["config"] is not None else kwargs.get("config")
                    if cfg is None:  # the trainer passed its settings one by one
                        est = kwargs.get("adv_estimator", args[0] if args else None)
                        cfg = {"adv_estimator": est, "gamma": kwargs.get("gamma", 1.0), "lam": kwargs.get("lam", 1.0),
                               "norm_adv_by_std_in_grpo": kwargs.get("norm_adv_by_std_in_grpo", True),
                               # verl-agent's compute_advantage takes GiGPO's settings as keywords
                               "gigpo": {"mode": kwargs.get("gigpo_mode", "mean_std_norm"), "step_advantage_w": kwargs.get("step_advantage_w", 1.0),
                                         "enable_similarity": kwargs.get("gigpo_enable_similarity", False),
                                         "similarity_thresh": kwargs.get("gigpo_similarity_thresh", 0.95)}}
                    log_verl_step(hook["run"], out, int(step), tokenizer=hook["tokenizer"], config=cfg)
            except Exception as e:  # a logging failure must not stop training
                _warn_dropped(step, e)
        return out

    return compute_advantage
