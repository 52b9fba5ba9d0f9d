"""SkyRL training batches (`TrainingInputBatch`) -> TurnLens groups, and SkyRL's estimator -> TurnLens's.

The conversion the live callback (integrations/skyrl.py) and the dump importer (importers/skyrl.py) share.

SkyRL's layout (skyrl/train/dataset/preprocess.py `convert_prompts_responses_to_batch_tensors`): one row
per trajectory; `sequences` is the left-padded prompt + response; the response-level tensors
(`response_mask`, `loss_mask`, `rewards`, `advantages`, `rollout_logprobs`) are right-aligned over the
longest response, `response_mask` 1 on the row's response tokens. A multi-turn response interleaves the
model's tokens (`loss_mask` 1) with environment tokens (`loss_mask` 0): each run of model tokens is one
turn, the environment tokens after it the next turn's observation (the verl agent-loop rule, shared code).
The last `metadata["pad_size"]` rows are copies SkyRL adds so the batch divides by the data-parallel size:
they are dropped. With `generator.step_wise_trajectories` each row is one turn and `is_last_step` ends a
trajectory.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..shapes import config_value

from .verl_rows import _decode, _row_turns


def _np(t: Any) -> Any:
    import numpy as np

    if hasattr(t, "detach"):
        t = t.detach().cpu()
        return t.float().numpy() if t.is_floating_point() else t.numpy()
    return np.asarray(t)


def _field(batch: Any, key: str) -> Any:
    try:
        value = batch[key]
    except KeyError:
        return None
    return None if value is None else _np(value)


def batch_groups(batch: Any, tokenizer: Any = None, rewards: Any = None, uids: Optional[Sequence[Any]] = None,
                 is_last_step: Optional[Sequence[bool]] = None,
                 advantages: Any = None) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    """({uid: [trajectory]}, facts about the batch) for one SkyRL training batch.

    rewards, uids, is_last_step, advantages: the values SkyRL's trainer had when it computed the advantages
    (it pops `rewards`, `uids` and `is_last_step` right after, and the policy step rescales `advantages`
    in place for the loss reduction); taken from the batch when not given. Without uids the groups are
    `metadata["policy_prompt_boundaries"]` (one group per prompt, named `prompt-<k>`); without rewards every
    turn's reward is 0 and facts["rewards"] is False."""
    import numpy as np

    meta = getattr(batch, "metadata", None) or {}
    seq = _field(batch, "sequences")
    resp_mask = _field(batch, "response_mask")
    if seq is None or resp_mask is None:
        raise KeyError("batch['sequences'] and batch['response_mask'] are required: this does not look like a SkyRL TrainingInputBatch")
    loss_mask = _field(batch, "loss_mask")
    if loss_mask is None:
        loss_mask = resp_mask
    attn = _field(batch, "attention_mask")
    adv = _np(advantages) if advantages is not None else _field(batch, "advantages")
    rew = _np(rewards) if rewards is not None else _field(batch, "rewards")
    logprobs = _field(batch, "rollout_logprobs")
    pad = int(meta.get("pad_size", 0) or 0)
    n = seq.shape[0] - pad
    width = resp_mask.shape[1]
    if uids is None:
        uids = meta.get("uids")
    if uids is None:
        bounds = meta.get("policy_prompt_boundaries") or [(0, n)]
        uids = [None] * seq.shape[0]
        for k, (s, e) in enumerate(bounds):
            for i in range(int(s), min(int(e), seq.shape[0])):
                uids[i] = f"prompt-{k}"
    if is_last_step is None:
        is_last_step = meta.get("is_last_step")
    groups: Dict[str, List[Dict[str, Any]]] = {}
    sizes: Dict[str, int] = {}
    empty = 0
    pending: List[Dict[str, Any]] = []  # step-wise: the turns of the trajectory being read
    context = np.zeros(0, dtype=seq.dtype)  # step-wise: the previous step's prompt and response
    mid_rewards = 0  # step-wise rows before the last step that carry a reward
    for i in range(n):
        sel = resp_mask[i] > 0
        count = int(sel.sum())
        ids = seq[i, -width:][sel]
        prompt = None
        if tokenizer is not None:
            keep = attn[i] > 0 if attn is not None else np.ones(seq.shape[1], dtype=bool)
            prompt = seq[i][keep][: max(0, int(keep.sum()) - count)]
        tokens: Dict[str, Any] = {"token_ids": ids}
        if logprobs is not None:
            tokens["token_logprobs"] = logprobs[i][sel]
        row_rewards = rew[i][sel].astype("float64") if rew is not None else np.zeros(count)
        uid = str(uids[i])
        turns = _row_turns(loss_mask[i][sel] > 0, row_rewards, adv[i][sel].astype("float64") if adv is not None else None,
                           tokens, prompt, tokenizer)
        if turns is None:
            empty += 1  # no model token: nothing was trained on this row
            if is_last_step is None or not is_last_step[i]:
                continue
            turns = []
        if is_last_step is not None:
            if turns and pending and prompt is not None and len(prompt) >= len(context) and (prompt[: len(context)] == context).all():
                # a later step's prompt is the context so far: its observation is what the environment added
                turns[0]["observation"] = _decode(tokenizer, prompt[len(context):])
            if prompt is not None:
                context = np.concatenate([prompt, ids])
            if turns and not is_last_step[i]:
                mid_rewards += int(any(t["reward"] != 0 for t in turns))
                for t in turns:
                    t.pop("done", None)
            pending.extend(turns)
            if not is_last_step[i]:
                continue
            turns, pending = pending, []
            if not turns:
                continue
            for k, t in enumerate(turns):
                t["turn_index"] = k
        sizes[uid] = sizes.get(uid, 0) + 1
        score = float(sum(t["reward"] for t in turns))
        groups.setdefault(uid, []).append({"turns": turns, "reward": score, "success": score > 0})
    if not groups:
        raise ValueError("no row of the batch has a model token under loss_mask")
    facts: Dict[str, Any] = {"rows": n, "padRows": pad, "emptyRows": empty, "rewards": rew is not None,
                             "stepWise": is_last_step is not None, "singletonGroups": sum(1 for s in sizes.values() if s == 1)}
    if mid_rewards:
        facts["rewardsBeforeLastStep"] = mid_rewards
    return groups, facts




def training_estimator(cfg: Any, facts: Optional[Dict[str, Any]] = None) -> Tuple[str, Dict[str, Any]]:
    """(estimator, params) for SkyRL's config (`trainer.cfg`) and one batch's facts: TurnLens's estimator
    where recomputing it from the stored turns gives the advantages SkyRL computed, else
    "skyrl:<name>" with SkyRL's settings and why."""
    facts = facts or {}
    algo = config_value(cfg, "trainer.algorithm")
    name = str(config_value(algo, "advantage_estimator", "grpo")).lower()
    norm_std = bool(config_value(algo, "grpo_norm_by_std", True))
    own = {"advantage_estimator": name, "grpo_norm_by_std": norm_std, "gamma": float(config_value(algo, "gamma", 1.0)),
           "lambd": float(config_value(algo, "lambd", 1.0)), "advantage_batch_normalize": bool(config_value(algo, "advantage_batch_normalize", False)),
           "use_kl_in_reward": bool(config_value(algo, "use_kl_in_reward", False))}

    def cannot(note: str) -> Tuple[str, Dict[str, Any]]:
        return f"skyrl:{name}", {"trainer": own, "note": note}

    if name not in ("grpo", "rloo"):
        if name in ("reinforce++", "gae"):
            return cannot(f"SkyRL's {name} runs token by token over response_mask (environment tokens and the batch's padding "
                          "copies included) and whitens over those tokens; TurnLens's works per turn.")
        return cannot(f"TurnLens has no estimator equivalent to SkyRL's {name!r}.")
    if not facts.get("rewards", True):
        return cannot("The batch holds no rewards (SkyRL pops them before dumping it); the stored turn rewards are 0.")
    if own["advantage_batch_normalize"]:
        return cannot("SkyRL z-scores the advantages over the batch before the loss; the stored advantages are the estimator's.")
    if facts.get("emptyRows"):
        return cannot(f"{facts['emptyRows']} rows have no token under loss_mask and are not stored, but SkyRL's group statistics counted them.")
    if facts.get("rewardsBeforeLastStep"):
        return cannot("Step-wise: SkyRL scores a trajectory by its last step's reward; earlier steps here carry rewards too.")
    if name == "rloo":
        if facts.get("singletonGroups"):
            return cannot(f"{facts['singletonGroups']} groups have one trajectory: SkyRL's RLOO gives it 0, TurnLens's its reward.")
        return "rloo", {}
    return ("grpo", {"epsilon": 1e-6}) if norm_std else ("drgrpo", {})
