"""verl-agent / verl multi-turn: one training step's batch -> `run.log_rollouts` groups.

In verl-agent (github.com/langfengQ/verl-agent) a training batch is a `DataProto` with one row
per turn (one LLM call) of every trajectory. The fields read here are the ones its rollout loop
(agent_system/multi_turn_rollout/rollout_loop.py) and GiGPO (gigpo/core_gigpo.py) use:

  non_tensor_batch (numpy object arrays, shape (bs,)):
    uid          the episode group (same initial state; GRPO/GiGPO's group)      -> group uid
    traj_uid     the trajectory                                                  -> trajectory
    anchor_obs   the observation without history that GiGPO groups steps by (Eq. 6) -> turn anchor
    rewards      the step's environment reward, after the invalid-action penalty   -> turn reward
    active_masks whether the env was still running at that turn (rows with False are skipped)
    is_action_valid (optional)                                                     -> turn valid
    episode_rewards, episode_lengths (optional)                                    -> trajectory reward
  batch (torch tensors, shape (bs, response_length)):
    advantages   what the actor's loss used (compute_advantage's output)          -> turn advantage
    response_mask the response tokens the advantage applies to
    responses / prompts (token ids), decoded when a tokenizer is given            -> action / observation
    responses under response_mask                                                  -> turn token_ids
    old_log_probs, advantages, entropys (optional) under response_mask            -> per-token values

Turn order inside a trajectory is the batch order of its rows, as in verl-agent's own
compute_step_discounted_returns. Call it after `compute_advantage` in the trainer's fit loop:

    from turnlens.integrations.verl import log_verl_step
    log_verl_step(run, batch, step=self.global_steps, tokenizer=self.tokenizer, estimator="gigpo")
"""

from typing import Any, Dict, List, Optional

_TEXT_LIMIT = 200_000


def _col(nt: Dict[str, Any], key: str, n: int, default: Any = None) -> List[Any]:
    if key not in nt:
        if default is KeyError:
            raise KeyError(f"non_tensor_batch[{key!r}] is missing: this does not look like a verl-agent training batch")
        return [default] * n
    col = nt[key]
    if len(col) != n:
        raise ValueError(f"non_tensor_batch[{key!r}] has {len(col)} rows, expected {n}")
    return list(col)


def _scalar(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _parts(batch: Any):
    """(tensor fields, non-tensor fields) from a DataProto or a plain {"batch": ..., "non_tensor_batch": ...}."""
    if isinstance(batch, dict):
        return batch.get("batch") or {}, batch["non_tensor_batch"]
    return batch.batch, batch.non_tensor_batch


def _row_advantages(tensors: Any) -> Optional[List[Optional[float]]]:
    """Per row: the advantage over its response tokens. verl broadcasts one value over a turn's
    response tokens, so the masked mean is that value (and a per-token advantage is averaged)."""
    if tensors is None or "advantages" not in tensors:
        return None
    adv = tensors["advantages"]
    mask = tensors["response_mask"] if "response_mask" in tensors else None
    adv = adv.detach().float().cpu().numpy() if hasattr(adv, "detach") else adv
    if mask is None:
        return [float(r.mean()) for r in adv]
    mask = mask.detach().float().cpu().numpy() if hasattr(mask, "detach") else mask
    out: List[Optional[float]] = []
    for a, m in zip(adv, mask):
        s = float(m.sum())
        out.append(float((a * m).sum() / s) if s > 0 else None)
    return out


def _decode(tokenizer: Any, tensors: Any, key: str, n: int) -> Optional[List[str]]:
    if tokenizer is None or tensors is None or key not in tensors:
        return None
    ids = tensors[key]
    mask_key = "response_mask" if key == "responses" else None
    rows = []
    for i in range(n):
        row = ids[i]
        if mask_key and mask_key in tensors:
            row = row[tensors[mask_key][i].bool()] if hasattr(row, "dim") else row
        rows.append(tokenizer.decode(row, skip_special_tokens=True)[:_TEXT_LIMIT])
    return rows


def _row_tokens(tensors: Any, tokenizer: Any, n: int) -> List[Dict[str, Any]]:
    """Per row: the response's token ids under response_mask, and the per-token values verl has
    for them (sampling log-probs, advantages, entropies), as turn fields; texts with a tokenizer."""
    if tensors is None or "responses" not in tensors or "response_mask" not in tensors:
        return [{} for _ in range(n)]
    def rows(key):
        if key not in tensors:
            return None
        t = tensors[key]
        return t.detach().float().cpu().numpy() if hasattr(t, "detach") and key != "responses" else (t.detach().cpu().numpy() if hasattr(t, "detach") else t)
    ids, mask = rows("responses"), rows("response_mask")
    extra = {name: rows(key) for name, key in (("token_logprobs", "old_log_probs"), ("token_advantages", "advantages"), ("token_entropies", "entropys"))}
    out: List[Dict[str, Any]] = []
    for i in range(n):
        keep = mask[i] > 0
        row: Dict[str, Any] = {"token_ids": [int(x) for x in ids[i][keep]]}
        for name, vals in extra.items():
            if vals is not None:
                row[name] = [float(x) for x in vals[i][keep]]
        if tokenizer is not None:
            row["token_texts"] = [tokenizer.decode([t]) for t in row["token_ids"]]
        out.append(row)
    return out


def batch_to_groups(batch: Any, tokenizer: Any = None, observations: Optional[List[str]] = None,
                    actions: Optional[List[str]] = None) -> Dict[str, List[Dict[str, Any]]]:
    """One verl-agent training batch -> {uid: [trajectory {turns, reward}]} for `run.log_rollouts`.

    batch: a verl `DataProto` (or a dict with "batch" and "non_tensor_batch").
    tokenizer: decodes `prompts`/`responses` into observation/action text (optional).
    observations, actions: per-row text to store instead (optional; default: the decoded prompt, else
      the anchor observation as text; the decoded response, else "").
    """
    tensors, nt = _parts(batch)
    uids = nt["uid"] if "uid" in nt else None
    if uids is None:
        raise KeyError("non_tensor_batch['uid'] is missing: this does not look like a verl-agent training batch")
    n = len(uids)
    traj_uids = _col(nt, "traj_uid", n, KeyError)
    rewards = _col(nt, "rewards", n, KeyError)
    anchors = _col(nt, "anchor_obs", n, None)
    active = _col(nt, "active_masks", n, True)
    valid = _col(nt, "is_action_valid", n, True)
    ep_rewards = _col(nt, "episode_rewards", n, None)
    advantages = _row_advantages(tensors) or [None] * n
    tokens = _row_tokens(tensors, tokenizer, n)
    obs = observations or _decode(tokenizer, tensors, "prompts", n)
    acts = actions or _decode(tokenizer, tensors, "responses", n)

    groups: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for i in range(n):
        if not bool(_scalar(active[i])):
            continue
        anchor = anchors[i]
        if getattr(anchor, "ndim", None) == 0:  # a numpy scalar; arrays (image anchors) stay arrays
            anchor = anchor.item()
        turn: Dict[str, Any] = {
            "observation": obs[i] if obs else (anchor if isinstance(anchor, str) else ""),
            "action": acts[i] if acts else "",
            "reward": float(_scalar(rewards[i])),
            "anchor": anchor,
            "valid": bool(_scalar(valid[i])),
        }
        if advantages[i] is not None:
            turn["advantage"] = advantages[i]
        turn.update(tokens[i])
        trajs = groups.setdefault(str(uids[i]), {})
        traj = trajs.setdefault(str(traj_uids[i]), {"turns": []})
        traj["turns"].append(turn)
        if ep_rewards[i] is not None:
            traj["reward"] = float(_scalar(ep_rewards[i]))
    out: Dict[str, List[Dict[str, Any]]] = {}
    for uid, trajs in groups.items():
        out[uid] = []
        for traj in trajs.values():
            traj["turns"][-1]["done"] = True
            if "reward" in traj:
                traj["success"] = traj["reward"] > 0
            out[uid].append(traj)
    return out


def log_verl_step(run: Any, batch: Any, step: int, tokenizer: Any = None, estimator: Optional[str] = None,
                  params: Optional[Dict[str, Any]] = None) -> None:
    """`run.log_rollouts(step, batch_to_groups(batch, tokenizer), estimator, params)`: returns at once."""
    run.log_rollouts(step, batch_to_groups(batch, tokenizer), estimator=estimator, params=params)
