"""The trainer's estimator: verl's or verl-agent's config -> TurnLens's equivalent estimator and every
one of its parameters, or "verl:<name>" / "verl-agent:<name>" and the trainer's settings where
TurnLens cannot recompute it.
"""

from typing import Any, Dict, Tuple

from ..shapes import config_value




def _plain(cfg: Any) -> Any:
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(cfg):
            return OmegaConf.to_container(cfg, resolve=True)
    except ImportError:
        pass
    return cfg


def training_estimator(config: Any, layout: str = "verl") -> Tuple[str, Dict[str, Any]]:
    """(estimator, params) for the trainer's config (the full config, or its `algorithm` section).

    layout "verl-agent": verl-agent's fit; "verl": verl's agent loop (one row per trajectory)."""
    algo = config_value(config, "algorithm") if config_value(config, "algorithm") is not None else config
    name = str(config_value(algo, "adv_estimator", "gae")).lower()
    gamma = float(config_value(algo, "gamma", 1.0))
    lam = float(config_value(algo, "lam", 1.0))
    norm_std = bool(config_value(algo, "norm_adv_by_std_in_grpo", True))
    kl_in_reward = bool(config_value(algo, "use_kl_in_reward", False))
    trainer = "verl-agent" if layout == "verl-agent" else "verl"
    own: Dict[str, Any] = {"adv_estimator": name, "gamma": gamma, "lam": lam, "norm_adv_by_std_in_grpo": norm_std,
                           "use_kl_in_reward": kl_in_reward}

    def cannot(note: str) -> Tuple[str, Dict[str, Any]]:
        return f"{trainer}:{name}", {"trainer": own, "note": note}

    if layout == "verl-agent":
        actor = config_value(config, "actor_rollout_ref.actor")
        use_pen = bool(config_value(actor, "use_invalid_action_penalty", True))
        coef = float(config_value(actor, "invalid_action_penalty_coef", 0.1))
        gigpo = config_value(algo, "gigpo")
        similar = bool(config_value(gigpo, "enable_similarity", False))
        own.update({"use_invalid_action_penalty": use_pen, "invalid_action_penalty_coef": coef})
        if name == "gigpo":
            own["gigpo"] = _plain(gigpo) if gigpo is not None else None
        if similar and name == "gigpo" and bool(config_value(config, "trainer.balance_batch", True)):
            own["balance_batch"] = True
            return cannot("Similarity clustering is greedy in batch order, which _balance_batch shuffles; TurnLens clusters in rollout order.")
        if kl_in_reward and name in ("gigpo", "grpo"):
            return cannot("The KL penalty is folded into the trained rewards per token, which the stored env rewards do not carry.")
        # the penalty is subtracted in the trainer's compute step, after the env rewards stored here
        params = {"gamma": gamma, "invalidPenalty": coef if use_pen else 0.0, "perTrajectory": False, "epsilon": 1e-6,
                  "anchorMatch": "similarity" if similar else "exact",
                  "similarityThreshold": float(config_value(gigpo, "similarity_thresh", 0.95))}
        if name == "gigpo":
            mode = str(config_value(gigpo, "mode", "mean_norm"))
            if mode not in ("mean_norm", "mean_std_norm"):
                return cannot(f"GiGPO mode {mode!r} is not one TurnLens implements.")
            return "gigpo", {**params, "omega": float(config_value(gigpo, "step_advantage_w", 1.0)), "mode": mode}
        if name == "grpo":
            # verl-agent's GRPO is GiGPO's episode term: statistics over all turn rows of the group
            return "gigpo", {**params, "omega": 0.0, "mode": "mean_std_norm" if norm_std else "mean_norm"}
        return cannot("verl-agent computes this estimator over turn rows in a way TurnLens does not reproduce.")

    if name in ("grpo", "grpo_vectorized"):
        return ("grpo", {"epsilon": 1e-6}) if norm_std else ("drgrpo", {})
    if name in ("rloo", "rloo_vectorized"):
        return "rloo", {}
    if name == "reinforce_plus_plus_baseline":
        return "reinforcepp_baseline", {}
    if name == "reinforce_plus_plus":
        if gamma == 1.0:
            return "reinforcepp", {"gamma": 1.0}
        return cannot("verl discounts the return token by token across turns and tool tokens; TurnLens discounts within a turn only.")
    if name == "gae":
        return cannot("verl's GAE runs token by token with the critic's value at every token; TurnLens's GAE has one value per turn.")
    return cannot(f"TurnLens has no estimator equivalent to verl's {name!r}.")
