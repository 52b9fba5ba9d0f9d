"""OpenRLHF: logs every batch its experience maker computes advantages for, from inside the trainer.

    import turnlens
    from turnlens.integrations.openrlhf import log_openrlhf
    log_openrlhf(turnlens.init(project="math", name="openrlhf-grpo"))          # every trainer in this process
    log_openrlhf(run, trainer.experience_maker)                                  # or one experience maker

OpenRLHF (0.11) logs metrics to wandb/tensorboard only and keeps no rollout dump; its advantages are
computed in `RemoteExperienceMaker.compute_advantages_and_returns(experiences)`, which the trainer's
`train_step(rollout_samples, global_step)` reaches through `make_experience_batch`. The wrapper logs each
call's experiences as one step, at `global_step + 1` (the step OpenRLHF logs that batch's metrics at) when
`BasePPOTrainer.train_step` is seen, else counted from 1.

Layout (samples_generator.py `_process_response_into_experience`): one row per sample; `sequences` is the
right-padded prompt + response; `action_mask[j]` marks `sequences[j + 1]` as a model token. A multi-turn
(agent) sample interleaves the model's tokens with environment tokens: each run of model tokens is one
turn, the tokens after it the next turn's observation (verl_rows' rule). The group of a sample is
`index // n_samples_per_prompt` (OpenRLHF's own reshape); the sample's reward sits on its last turn.

Estimator (`args.algo.advantage.estimator`): group_norm -> grpo (epsilon 1e-9), dr_grpo -> drgrpo, rloo ->
rloo, when no KL penalty reached the rewards and the reward clip did not bind; everything else
"openrlhf:<name>" with the reason. Logging never raises into the trainer.
"""

import importlib
import threading
import warnings
from typing import Any, Callable, Dict, List, Tuple

from ..shapes import config_value

from .verl_rows import _np, _row_turns

# Settings of the class-level hook (log_openrlhf without an experience maker); empty when none is installed.
_hook: Dict[str, Any] = {}
# The trainer's step being made in this thread (from train_step), and whether a logging wrapper is running
# (an instance wrapper over the class-level one logs the call once).
_local = threading.local()




def _args(maker: Any, config: Any) -> Any:
    return config if config is not None else getattr(getattr(maker, "strategy", None), "args", None)


def _setting(args: Any, nested: str, flat: str, default: Any) -> Any:
    """OpenRLHF 0.11 nests its arguments (args.algo.advantage.estimator); older releases were flat."""
    value = config_value(args, nested)
    return value if value is not None else config_value(args, flat, default)


def experience_groups(experiences: List[Any], n_samples: int, tokenizer: Any = None) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    """({uid: [trajectory]}, facts) for the experiences one compute_advantages_and_returns call returned."""
    import numpy as np

    groups: Dict[str, List[Dict[str, Any]]] = {}
    empty = 0
    pos = 0
    for exp in experiences:
        seq = _np(exp.sequences)
        attn = _np(exp.attention_mask) if exp.attention_mask is not None else np.ones(seq.shape, dtype=np.int64)
        act = _np(exp.action_mask) > 0
        adv = _np(exp.advantages).astype("float64")
        rew = _np(exp.rewards).astype("float64").reshape(-1)
        logp = exp.rollout_log_probs if exp.rollout_log_probs is not None else exp.action_log_probs
        logp = _np(logp) if logp is not None else None
        index = list(exp.index) if exp.index is not None else list(range(pos, pos + seq.shape[0]))
        pos += seq.shape[0]
        for i in range(seq.shape[0]):
            length = int(attn[i].sum())  # right padding
            where = np.flatnonzero(act[i][: max(0, length - 1)])
            if where.size == 0:
                empty += 1
                continue
            lo, hi = int(where[0]), length - 1  # action positions; token = sequences[position + 1]
            mask = act[i][lo:hi]
            rewards = np.zeros(hi - lo)
            rewards[int(where[-1]) - lo] = rew[i]  # OpenRLHF's compute_reward puts r on the last model token
            tokens: Dict[str, Any] = {"token_ids": seq[i][lo + 1: hi + 1]}
            if logp is not None:
                tokens["token_logprobs"] = logp[i][lo:hi]
            turns = _row_turns(mask, rewards, adv[i][lo:hi], tokens, seq[i][: lo + 1], tokenizer)
            uid = f"prompt-{int(index[i]) // max(1, n_samples)}"
            score = float(rew[i])
            groups.setdefault(uid, []).append({"turns": turns, "reward": score, "success": score > 0})
    if not groups:
        raise ValueError("no experience has a model token under action_mask")
    return groups, {"rows": pos, "emptyRows": empty, "samplesPerPrompt": n_samples}


def training_estimator(args: Any, facts: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """TurnLens's estimator where recomputing it from the stored turns gives OpenRLHF's advantages, else
    "openrlhf:<name>" with OpenRLHF's settings and why."""
    name = str(_setting(args, "algo.advantage.estimator", "advantage_estimator", "gae"))
    own = {"advantage_estimator": name, "n_samples_per_prompt": facts.get("samplesPerPrompt"),
           "gamma": float(_setting(args, "algo.advantage.gamma", "gamma", 1.0)),
           "lambd": float(_setting(args, "algo.advantage.lambd", "lambd", 1.0)),
           "no_std_norm": bool(_setting(args, "algo.advantage.no_std_norm", "no_advantage_std_norm", False)),
           "kl_coef": facts.get("klCoef"), "reward_clip_range": facts.get("clipRange")}

    def cannot(note: str) -> Tuple[str, Dict[str, Any]]:
        return f"openrlhf:{name}", {"trainer": own, "note": note}

    if name in ("reinforce", "reinforce_baseline", "gae"):
        return cannot(f"OpenRLHF's {name} whitens over the batch's model tokens with the biased (N) variance and "
                      "rsqrt(max(var, 1e-8)); TurnLens whitens with the unbiased (N-1) variance and sqrt(var + 1e-8)"
                      + ("; its GAE runs token by token with the critic's value at every token." if name == "gae" else "."))
    if name not in ("group_norm", "dr_grpo", "rloo"):
        return cannot(f"TurnLens has no estimator equivalent to OpenRLHF's {name!r}.")
    if facts.get("klInReward"):
        return cannot("The KL penalty (kl_coef * kl per token) is folded into the rewards the returns sum, which the stored rewards do not carry.")
    if facts.get("clipped"):
        return cannot("reward.clip_range clamped some shaped rewards (after the group baseline); TurnLens does not clip.")
    if facts.get("emptyRows"):
        return cannot(f"{facts['emptyRows']} samples have no model token and are not stored, but OpenRLHF's group statistics counted them.")
    if name == "group_norm":
        return "grpo", {"epsilon": 1e-9}
    return ("drgrpo", {}) if name == "dr_grpo" else ("rloo", {})


def _log(settings: Dict[str, Any], maker: Any, experiences: List[Any], kl: List[Any], step: int) -> None:
    import numpy as np

    args = _args(maker, settings.get("config"))
    n = int(_setting(args, "rollout.n_samples_per_prompt", "n_samples_per_prompt", 1))
    tokenizer = settings.get("tokenizer") or getattr(maker, "tokenizer", None)
    groups, facts = experience_groups(experiences, n, tokenizer)
    coef = float(getattr(getattr(maker, "kl_ctl", None), "value", 0.0) or 0.0)
    facts["klCoef"] = coef
    facts["klInReward"] = coef > 0 and any(k is not None and bool((_np(k) != 0).any()) for k in kl)
    clip = _setting(args, "reward.clip_range", "reward_clip_range", None)
    if clip:
        facts["clipRange"] = [float(clip[0]), float(clip[1])]
        advs = [_np(e.advantages)[_np(e.action_mask) > 0] for e in experiences]
        facts["clipped"] = any(bool(np.isclose(a, c, rtol=0, atol=1e-6).any()) for a in advs for c in facts["clipRange"])
    estimator, params = training_estimator(args, facts)
    run = settings["run"]
    if callable(run) and not hasattr(run, "log_rollouts"):
        run = settings["run"] = run()  # a factory: the run starts in the process that trains
    run.log_rollouts(int(step), groups, estimator=estimator, params=params, diagnostics={"openrlhf": facts})


def _wrap(orig: Callable, settings: Dict[str, Any], bound: bool) -> Callable:
    def compute_advantages_and_returns(*a: Any, **kw: Any) -> Any:
        if getattr(_local, "inside", False) or not settings:
            return orig(*a, **kw)
        maker = a[0] if not bound else getattr(orig, "__self__", None)
        experiences = (a[1] if not bound else a[0]) if len(a) > (0 if bound else 1) else kw.get("experiences")
        try:
            kl = [getattr(e, "kl", None) for e in experiences]  # OpenRLHF sets experience.kl to None in the call
            kl = [k.detach().clone() if hasattr(k, "detach") else k for k in kl]
        except Exception:
            kl = []
        _local.inside = True
        try:
            out = orig(*a, **kw)
        finally:
            _local.inside = False
        pending = getattr(_local, "step", None)
        _local.step = None
        settings["calls"] = settings.get("calls", 0) + 1
        step = pending if pending is not None else settings["calls"]
        if step % settings.get("every", 1) == 0:
            try:
                _log(settings, maker, out if out is not None else experiences, kl, step)
            except Exception as e:  # logging must not stop training
                warnings.warn(f"turnlens: the rollouts of OpenRLHF step {step} were not logged ({type(e).__name__}: {e})", stacklevel=2)
        return out

    compute_advantages_and_returns._turnlens_orig = orig
    compute_advantages_and_returns._turnlens_settings = settings
    return compute_advantages_and_returns


def _wrap_train_step(orig: Callable) -> Callable:
    def train_step(self: Any, rollout_samples: Any, global_step: int, *a: Any, **kw: Any) -> Any:
        try:
            _local.step = int(global_step) + 1  # train_step returns global_step + 1 and logs the batch there
        except Exception:
            _local.step = None
        try:
            return orig(self, rollout_samples, global_step, *a, **kw)
        finally:
            _local.step = None

    train_step._turnlens_orig = orig
    return train_step


def log_openrlhf(run: Any, experience_maker: Any = None, tokenizer: Any = None, config: Any = None, every: int = 1) -> Callable[[], None]:
    """Logs the experiences of every advantage computation of OpenRLHF's trainer to `run`.

    run: a `turnlens.init` run, or a function returning one (called at the first logged step, so a Ray
      worker setup hook can install it in every worker and only the trainer's process starts a run).
    experience_maker: a `RemoteExperienceMaker` or a trainer holding one (`.experience_maker`): wraps that
      instance; None: patches the class (and `BasePPOTrainer.train_step`, for the step numbers) for every
      trainer in this process: call it in the process that runs the trainer (OpenRLHF's PPOTrainer is a Ray
      actor; e.g. `ray.init(runtime_env={"worker_process_setup_hook": ...})`).
    tokenizer: decodes prompts and responses (default: the experience maker's). config: OpenRLHF's args
      (default: the experience maker's `strategy.args`). every: log the steps divisible by it.
    Installing again replaces the settings (each call is still logged once). Returns a function that undoes it."""
    settings = {"run": run, "tokenizer": tokenizer, "config": config, "every": max(1, int(every))}
    if experience_maker is None:
        em = importlib.import_module("openrlhf.trainer.ppo_utils.experience_maker")
        cls = getattr(em, "RemoteExperienceMaker", None) or em.ExperienceMaker
        _hook.clear()
        _hook.update(settings)
        if getattr(cls.compute_advantages_and_returns, "_turnlens_orig", None) is None:
            cls.compute_advantages_and_returns = _wrap(cls.compute_advantages_and_returns, _hook, bound=False)
        trainer_cls = None
        try:
            trainer_cls = importlib.import_module("openrlhf.trainer.ppo_trainer").BasePPOTrainer
        except Exception:  # the trainer module imports vLLM and datasets; without them steps are counted
            pass
        if trainer_cls is not None and getattr(trainer_cls.train_step, "_turnlens_orig", None) is None:
            trainer_cls.train_step = _wrap_train_step(trainer_cls.train_step)

        def restore() -> None:
            _hook.clear()
            orig = getattr(cls.compute_advantages_and_returns, "_turnlens_orig", None)
            if orig is not None:
                cls.compute_advantages_and_returns = orig
            if trainer_cls is not None and getattr(trainer_cls.train_step, "_turnlens_orig", None) is not None:
                trainer_cls.train_step = trainer_cls.train_step._turnlens_orig

        return restore

    trainer = experience_maker if hasattr(experience_maker, "experience_maker") else None
    maker = trainer.experience_maker if trainer is not None else experience_maker
    cur = maker.compute_advantages_and_returns
    if getattr(cur, "_turnlens_settings", None) is not None and "compute_advantages_and_returns" in vars(maker):
        cur._turnlens_settings.clear()
        cur._turnlens_settings.update(settings)
    else:
        maker.compute_advantages_and_returns = _wrap(cur, settings, bound=True)
    if trainer is not None and getattr(trainer.train_step, "_turnlens_orig", None) is None:
        trainer.train_step = _wrap_train_step(type(trainer).train_step).__get__(trainer)

    def restore_instance() -> None:
        wrapper = vars(maker).get("compute_advantages_and_returns")
        if wrapper is not None and getattr(wrapper, "_turnlens_settings", None) is not None:
            wrapper._turnlens_settings.clear()
            del maker.compute_advantages_and_returns
        if trainer is not None and "train_step" in vars(trainer):
            del trainer.train_step

    return restore_instance
