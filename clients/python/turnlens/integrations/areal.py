"""AReaL's PPO actor: a hook on `PPOActor.compute_advantages` (areal/trainer/ppo/actor.py, AReaL 1.0.4) that
logs each training batch with the advantages it trained on.

`compute_advantages(data)` takes the trainer's batch as a list of dicts, one per rollout task (its
n_samples sequences along the first dimension: a GRPO group), and returns them with `advantages` per
token and `loss_mask` shifted one to the left (position t scores token t + 1). Each task becomes a group,
each sequence a trajectory, each run of trained tokens (AReaL's loss_mask before the shift) a turn: the
tokens before it are its observation, its tokens the action (text when a tokenizer is known), the
sequence reward sits on the last turn, the turn's advantage is the mean over its tokens (GRPO-style
settings give one value per sequence) with tokenAdvantages and tokenLogprobs kept per token. The step
is the actor's policy version (`engine.get_version()`), which AReaL's trainer sets to global_step before
each step's update. With `versions` in the batch (AReaL's per-token policy versions), the first turn's
info holds head_version and tail_version (the oldest and newest version that generated the sequence),
version_span (tail - head) and staleness (step - head_version), and the step gets the metrics
areal/staleness_mean, areal/staleness_max and areal/version_span_max.

The estimator is read from the actor's config (see `training_estimator`).
"""

import warnings
from typing import Any, Dict, List, Optional, Tuple

from .. import shapes
from .verl_hook import _patch, _unpatch

# The installed hook's settings (run, tokenizer, every); empty when none is installed. The wrapper reads it,
# so installing again replaces the settings and never wraps twice.
_hook: Dict[str, Any] = {}




def _norm(cfg: Any) -> Optional[Dict[str, Any]]:
    if cfg is None:
        return None
    return {k: shapes.config_value(cfg, k) for k in ("mean_level", "mean_leave1out", "std_level", "std_unbiased", "eps", "group_size")}


def _settings(config: Any) -> Dict[str, Any]:
    """The PPOActorConfig fields compute_advantages reads."""
    keys = ("reward_bias", "reward_scaling", "reward_clip", "overlong_reward_penalty", "overlong_tokens",
            "overlong_penalty_factor", "mask_no_eos_with_zero", "discount", "gae_lambda", "kl_ctl", "kl_estimator")
    out = {k: shapes.config_value(config, k) for k in keys}
    out["reward_norm"] = _norm(shapes.config_value(config, "reward_norm"))
    out["adv_norm"] = _norm(shapes.config_value(config, "adv_norm"))
    return out


def _name(s: Dict[str, Any], critic: bool) -> str:
    """AReaL's algorithm, as its example configs name it, from the settings."""
    if critic:
        return "ppo"
    rn = s["reward_norm"] or {}
    if rn.get("mean_level") == "group" and rn.get("mean_leave1out") and not rn.get("std_level"):
        return "rloo"
    if rn.get("mean_level") == "group" and rn.get("std_level") == "group":
        return "grpo"
    if rn.get("mean_level") == "group" and not rn.get("std_level"):
        return "drgrpo"
    return "reinforce"


def training_estimator(config: Any, sizes: List[int], rewards: List[float], critic: bool = False,
                       truncated: bool = False) -> Tuple[str, Dict[str, Any]]:
    """(estimator, params) for a batch compute_advantages trained on with `config` (a PPOActorConfig).

    A TurnLens estimator only where recomputing with it reproduces AReaL's advantages: no critic, kl_ctl 0,
    discount and gae_lambda 1, no overlong penalty, every |(reward + reward_bias) * reward_scaling| within
    reward_clip, no adv_norm, and reward_norm at group level over each task's sequences (group_size = the
    task's size, at least 2): mean and unbiased std -> grpo (epsilon = reward_norm.eps / reward_scaling:
    the z-score ignores the bias and the scale but for eps), mean only -> drgrpo, leave-one-out mean only
    -> rloo (both with bias 0 and scaling 1). Otherwise "areal:<name>" (ppo with a critic, grpo, drgrpo,
    rloo or reinforce, from reward_norm) with the settings in params.trainer and the reason in params.note.
    sizes: the sequences of each task; rewards: every sequence's reward; truncated: a sequence fills the
    batch's width (mask_no_eos_with_zero zeroes its reward)."""
    s = _settings(config)
    name = _name(s, critic)
    rn = s["reward_norm"] or {}
    why = []
    if critic:
        why.append("a critic's values enter AReaL's token-level GAE")
    if s["kl_ctl"]:
        why.append(f"kl_ctl {s['kl_ctl']} adds a per-token KL penalty to the rewards")
    if (s["discount"], s["gae_lambda"]) != (1.0, 1.0):
        why.append(f"discount {s['discount']} and gae_lambda {s['gae_lambda']} decay the reward over the sequence's tokens")
    bias, scale = s["reward_bias"] or 0.0, s["reward_scaling"]
    # the group z-score ignores a bias and, with eps divided by it, a positive scale: (sR - sm) / (s std + eps)
    if not (name == "grpo" and scale > 0) and (bias or scale != 1.0):
        why.append(f"reward_bias {bias} and reward_scaling {scale} change the rewards before normalising")
    if s["overlong_reward_penalty"]:
        why.append("overlong_reward_penalty changes the rewards of long sequences")
    clip = s["reward_clip"]
    if clip is not None and any(abs((r + bias) * scale) > clip for r in rewards):
        why.append(f"rewards beyond reward_clip {clip} (after bias and scaling) were clipped")
    if s["mask_no_eos_with_zero"] and truncated:
        why.append("mask_no_eos_with_zero zeroed the rewards of sequences without EOS")
    if s["adv_norm"]:
        why.append("adv_norm normalises the token advantages (token-weighted statistics)")
    if name in ("grpo", "drgrpo", "rloo"):
        g = rn.get("group_size")
        if any(n != g for n in sizes):
            why.append(f"reward_norm.group_size {g} differs from the tasks' sizes {sorted(set(sizes))}")
        elif g is not None and g < 2:
            why.append("reward_norm over groups of one sequence")
        if name == "grpo" and not rn.get("std_unbiased", True):
            why.append("reward_norm uses the biased (population) std")
        if name == "grpo" and rn.get("mean_leave1out"):
            why.append("reward_norm's leave-one-out mean with std")
    elif name != "ppo":
        why.append("reward_norm is not a group-level normalisation")
    if not why:
        return (name, {"epsilon": rn.get("eps", 1e-5) / scale}) if name == "grpo" else (name, {})
    return f"areal:{name}", {"trainer": s, "note": "; ".join(why) + " (TurnLens's estimators do not reproduce this)"}


def _rows(t: Any, i: int) -> List[Any]:
    return t[i].tolist()


def _decode(tokenizer: Any, ids: List[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=False) if tokenizer is not None and ids else ""


def batch_to_groups(data: List[Dict[str, Any]], step: int, tokenizer: Any = None) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    """compute_advantages' output -> ({task: [trajectory]}, stats) for `run.log_rollouts`."""
    groups: Dict[str, List[Dict[str, Any]]] = {}
    stale: List[int] = []
    spans: List[int] = []
    rewards: List[float] = []
    sizes: List[int] = []
    truncated = False
    for k, d in enumerate(data):
        attn = d["attention_mask"]
        n, width = attn.shape[0], attn.shape[-1]
        sizes.append(n)
        trajs = []
        for i in range(n):
            seqlen = int(attn[i].sum().item())
            truncated = truncated or seqlen == width
            ids = _rows(d["input_ids"], i)[:seqlen]
            shifted = _rows(d["loss_mask"], i)
            mask = [0] + shifted[: seqlen - 1]  # the output's mask is shifted left by one: undo it
            adv = _rows(d["advantages"], i)
            lp = _rows(d["logprobs"], i) if "logprobs" in d else None
            reward = float(d["rewards"][i].item())
            rewards.append(reward)
            runs = shapes.mask_runs(mask)
            info: Dict[str, Any] = {"task": k, "sample_idx": i, "seqlen": seqlen}
            if "versions" in d and runs:
                vs = _rows(d["versions"], i)
                gen = [vs[t] for a, b in runs for t in range(a, b) if vs[t] >= 0]
                if gen:
                    head, tail = min(gen), max(gen)
                    info.update(head_version=head, tail_version=tail, version_span=tail - head, staleness=step - head)
                    stale.append(step - head)
                    spans.append(tail - head)
            turns = []
            prev = 0
            for j, (a, b) in enumerate(runs):
                tok_adv = adv[a - 1 : b - 1]  # position t - 1 scores token t
                turn: Dict[str, Any] = {"observation": _decode(tokenizer, ids[prev:a]), "action": _decode(tokenizer, ids[a:b]),
                                        "reward": reward if j == len(runs) - 1 else 0.0, "advantage": sum(tok_adv) / len(tok_adv),
                                        "tokenIds": ids[a:b], "tokenAdvantages": tok_adv}
                if lp is not None:
                    turn["tokenLogprobs"] = lp[a - 1 : b - 1]
                if j == 0:
                    turn["info"] = info
                if j == len(runs) - 1:
                    turn["done"] = True
                turns.append(turn)
                prev = b
            if turns:
                trajs.append({"turns": turns})
        if trajs:
            groups[f"task-{k:04d}"] = trajs
    stats = {"sizes": sizes, "rewards": rewards, "truncated": truncated, "staleness": stale, "spans": spans}
    return groups, stats


def log_areal_step(run: Any, data: List[Dict[str, Any]], step: int, config: Any = None, tokenizer: Any = None,
                   estimator: Optional[str] = None, params: Optional[Dict[str, Any]] = None) -> None:
    """Logs compute_advantages' output at `step`; the estimator from `config` unless given. Never raises:
    a batch that cannot be logged is warned about and dropped."""
    try:
        groups, st = batch_to_groups(data, step, tokenizer)
        if estimator is None and config is not None:
            critic = any("values" in d for d in data)
            estimator, params = training_estimator(config, st["sizes"], st["rewards"], critic, st["truncated"])
        run.log_rollouts(step, groups, estimator=estimator, params=params)
        if st["staleness"]:
            run.log({"areal/staleness_mean": sum(st["staleness"]) / len(st["staleness"]),
                     "areal/staleness_max": max(st["staleness"]), "areal/version_span_max": max(st["spans"])}, step=step)
    except Exception as e:  # a logging failure must not stop training
        warnings.warn(f"turnlens: the rollouts of step {step} were not logged ({type(e).__name__}: {e})", stacklevel=2)


def _wrapper(orig: Any) -> Any:
    def compute_advantages(self, data, *args, **kwargs):
        out = orig(self, data, *args, **kwargs)
        if _hook:
            try:
                step = int(self.engine.get_version())
                if step % _hook["every"] == 0:
                    tok = _hook["tokenizer"] if _hook["tokenizer"] is not None else getattr(self.engine, "tokenizer", None)
                    log_areal_step(_hook["run"], out, step, config=self.config, tokenizer=tok)
            except Exception as e:  # a logging failure must not stop training
                warnings.warn(f"turnlens: a batch of AReaL's compute_advantages was not logged ({type(e).__name__}: {e})", stacklevel=2)
        return out

    return compute_advantages


def hook_compute_advantages(run: Any, tokenizer: Any = None, every: int = 1) -> Any:
    """Logs every batch AReaL's `PPOActor.compute_advantages` returns, at the actor's policy version (the
    trainer's global_step), labelled with the estimator read from the actor's config.

    Call it in the process that runs the actor's compute_advantages: the trainer's process when the actor
    is local (FSDPPPOActor, MegatronPPOActor, ArchonPPOActor); with AReaL's single-controller scheduler the
    actor runs in its training workers (PPOActorController forwards the call), so install it there. Each
    data-parallel rank computes its share of the tasks (AReaL redistributes whole tasks by length) and a
    run stores a step once: install it on rank 0, or give each rank a run of its own.
    tokenizer: decodes observation and action text (default: the engine's `tokenizer`, if any).
    every: log the steps divisible by it.
    Installing again replaces the run and settings (each batch is still logged once); logging never raises
    into the trainer. Returns a function that undoes it."""
    import importlib

    _hook.update(run=run, tokenizer=tokenizer, every=max(1, int(every)))
    actor = importlib.import_module("areal.trainer.ppo.actor")
    _patch(actor.PPOActor, "compute_advantages", _wrapper)

    def restore() -> None:
        _hook.clear()
        _unpatch(actor.PPOActor, "compute_advantages")

    return restore
