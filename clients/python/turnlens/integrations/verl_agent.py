"""verl-agent (github.com/langfengQ/verl-agent): one batch row per turn of every trajectory.

non_tensor_batch: uid (the GRPO/GiGPO group), traj_uid (the trajectory), anchor_obs (GiGPO's anchor
state), rewards (the env reward of the turn, before the invalid-action penalty), active_masks,
is_action_valid, episode_rewards; batch: advantages, response_mask, responses, prompts,
old_log_probs, entropys.

Its `fit` appends copied rows (`adjust_batch`) and reorders the batch (`_balance_batch`) before
`compute_advantage`, so batch order is not turn order. `mark_rollout(batch)`, called on the rollout
loop's output, records each row's rollout position; here the rows are put back in that order and
the copies are dropped (a copy carries the marks of the row it copies). An unmarked batch is refused.
"""

from typing import Any, Dict, List, Optional, Tuple

from .verl_rows import _col, _decode, _has, _np, _parts, _prompt_keep, _row, _scalar, _token_arrays, _token_fields


# Non-tensor fields `mark_rollout` adds: the row's position in the rollout batch, and the turn's
# index in its trajectory.
MARK_ROW = "turnlens_row"
MARK_TURN = "turnlens_turn"

_UNMARKED = (
    "this verl-agent batch has no rollout marks, so its turn order is unknown (verl-agent's fit "
    "copies rows with adjust_batch and reorders them with _balance_batch before compute_advantage): call "
    "`batch = turnlens.integrations.verl.mark_rollout(gen_batch_output)` right after "
    "`self.traj_collector.multi_turn_loop(...)` in fit"
)


class BatchOrderError(ValueError):
    """A batch whose turn order cannot be recovered; nothing of it is stored."""


def mark_rollout(batch: Any) -> Any:
    """Records each row's rollout position (`turnlens_row`) and its turn index in its trajectory
    (`turnlens_turn`, counted per traj_uid in batch order) as non-tensor fields, which verl's
    DataProto keeps through copies, reordering and unions. Call it on verl-agent's rollout output,
    before anything reorders it:

        gen_batch_output = self.traj_collector.multi_turn_loop(...)
        gen_batch_output = mark_rollout(gen_batch_output)

    Returns the batch (marked in place)."""
    import numpy as np

    _, nt = _parts(batch)
    if "traj_uid" not in nt:
        raise KeyError("non_tensor_batch['traj_uid'] is missing: mark_rollout expects verl-agent's rollout output")
    traj = nt["traj_uid"]
    seen: Dict[Any, int] = {}
    turn = np.empty(len(traj), dtype=np.int64)
    for i, t in enumerate(traj):
        turn[i] = seen.get(t, 0)
        seen[t] = turn[i] + 1
    nt[MARK_ROW] = np.arange(len(traj), dtype=np.int64)
    nt[MARK_TURN] = turn
    return batch


def _rollout_order(nt: Dict[str, Any], n: int) -> Tuple[List[int], Dict[int, int]]:
    """(the batch rows to store, in rollout order; {row: copies of it dropped})."""
    if MARK_ROW not in nt or MARK_TURN not in nt:
        raise BatchOrderError(_UNMARKED)
    pos = [int(x) for x in _col(nt, MARK_ROW, n)]
    turn = [int(x) for x in _col(nt, MARK_TURN, n)]
    traj = _col(nt, "traj_uid", n, KeyError)
    first: Dict[int, int] = {}
    copies: Dict[int, int] = {}
    for i in range(n):
        j = first.get(pos[i])
        if j is None:
            first[pos[i]] = i
            continue
        if traj[i] != traj[j] or turn[i] != turn[j]:
            raise BatchOrderError(f"rows {j} and {i} carry the same rollout mark {pos[i]} but differ in traj_uid or turn: "
                                  "mark_rollout must be called once, on the whole rollout batch")
        copies[j] = copies.get(j, 0) + 1
    order = sorted(first.values(), key=lambda i: pos[i])
    # every trajectory must keep turns 0..k-1: a gap means rows were removed after marking
    nxt: Dict[Any, int] = {}
    for i in order:
        want = nxt.get(traj[i], 0)
        if turn[i] != want:
            raise BatchOrderError(f"trajectory {traj[i]}: turn {want} is missing from the batch (found turn {turn[i]}); "
                                  "rows were removed after mark_rollout, so the trajectory cannot be stored whole")
        nxt[traj[i]] = want + 1
    return order, copies


def _row_advantages(tensors: Any) -> Optional[List[Optional[float]]]:
    """Per row: the advantage over its response tokens. verl broadcasts one value over a turn's
    response tokens, so the masked mean is that value (and a per-token advantage is averaged)."""
    if not _has(tensors, "advantages"):
        return None
    adv = _np(tensors["advantages"])
    if not _has(tensors, "response_mask"):
        return [float(r.mean()) for r in adv]
    mask = _np(tensors["response_mask"]).astype("float64")
    out: List[Optional[float]] = []
    for a, m in zip(adv, mask):
        s = float(m.sum())
        out.append(float((a * m).sum() / s) if s > 0 else None)
    return out


def _agent_groups(tensors: Any, nt: Dict[str, Any], tokenizer: Any, observations: Optional[List[str]],
                  actions: Optional[List[str]]) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    uids = nt["uid"]
    n = len(uids)
    order, copies = _rollout_order(nt, n)
    traj_uids = _col(nt, "traj_uid", n, KeyError)
    rewards = _col(nt, "rewards", n, KeyError)
    anchors = _col(nt, "anchor_obs", n, None)
    active = _col(nt, "active_masks", n, True)
    valid = _col(nt, "is_action_valid", n, True)
    ep_rewards = _col(nt, "episode_rewards", n, None)
    advantages = _row_advantages(tensors) or [None] * n
    has_tokens = _has(tensors, "responses") and _has(tensors, "response_mask")
    mask = _np(tensors["response_mask"]) > 0 if _has(tensors, "response_mask") else None
    arrays = _token_arrays(tensors) if has_tokens else {}

    groups: Dict[str, Dict[str, Dict[str, Any]]] = {}
    copied_groups = set()
    for i in order:
        if not bool(_scalar(active[i])):
            continue
        anchor = anchors[i]
        if getattr(anchor, "ndim", None) == 0:  # a numpy scalar; arrays (image anchors) stay arrays
            anchor = anchor.item()
        obs = observations[i] if observations else None
        act = actions[i] if actions else None
        if tokenizer is not None and obs is None and _has(tensors, "prompts"):
            obs = _decode(tokenizer, _np(tensors["prompts"][i])[_prompt_keep(tensors, i)])
        if tokenizer is not None and act is None and has_tokens:
            act = _decode(tokenizer, arrays["token_ids"][i][mask[i]])
        turn: Dict[str, Any] = {
            "observation": obs if obs is not None else (anchor if isinstance(anchor, str) else ""),
            "action": act if act is not None else "",
            "reward": float(_scalar(rewards[i])),
            "anchor": anchor,
            "valid": bool(_scalar(valid[i])),
            "traj_uid": str(traj_uids[i]),
        }
        if advantages[i] is not None:
            turn["advantage"] = advantages[i]
        if mask is not None:
            turn["tokenCount"] = int(mask[i].sum())
        if has_tokens:
            turn.update(_token_fields(_row(arrays, i), tokenizer, mask[i]))
        if copies.get(i):
            # adjust_batch trained this row more than once; its copies also weigh in the group statistics
            turn["batch_copies"] = copies[i]
            copied_groups.add(str(uids[i]))
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
    meta = {"layout": "verl-agent", "rows": n, "copiesDropped": sum(copies.values()), "copiedGroups": sorted(copied_groups)}
    return out, meta
