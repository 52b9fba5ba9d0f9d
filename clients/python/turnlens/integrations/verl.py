"""verl-agent and verl: one training step's batch -> `run.log_rollouts` groups, with the trainer's
estimator and parameters.

Two batch layouts are read (a verl `DataProto`, or a dict {"batch": tensors, "non_tensor_batch": ...}):

verl-agent (github.com/langfengQ/verl-agent): one row per turn of every trajectory.
  non_tensor_batch: uid (the GRPO/GiGPO group), traj_uid (the trajectory), anchor_obs (GiGPO's anchor
  state), rewards (the env reward of the turn, before the invalid-action penalty), active_masks,
  is_action_valid, episode_rewards; batch: advantages, response_mask, responses, prompts,
  old_log_probs, entropys.
  Its `fit` appends copied rows (`adjust_batch`) and reorders the batch (`_balance_batch`) before
  `compute_advantage`, so batch order is not turn order. `mark_rollout(batch)`, called on the rollout
  loop's output, records each row's rollout position; here the rows are put back in that order and
  the copies are dropped (a copy carries the marks of the row it copies). An unmarked batch is refused.

verl (volcengine/verl >= 0.6 agent loop): one row per trajectory; the response interleaves the
  model's tokens (response_mask 1) with tool/environment tokens (response_mask 0). Each run of
  model tokens is one turn; the tool tokens after it are the next turn's observation. A turn's reward
  is the sum of token_level_rewards over its tokens and the tool tokens after it, so the turns of a
  trajectory add up to the score verl's estimators use.

verl's v1 trainer (verl 0.9's default): one row per agent-loop output, keyed "{uid}_{session}_{index}"
  in the trainer's TransferQueue; `hook_compute_advantage` reads the rows back after the trainer's
  `_compute_advantage` and `v1_groups` makes one trajectory of each session (its outputs' turns).

The estimator: pass the trainer's config (`config=self.config`, OmegaConf or dict) and the step is
labelled with TurnLens's equivalent estimator and every one of its parameters, or with
"verl:<name>" / "verl-agent:<name>" and the trainer's settings where TurnLens cannot recompute it.
"""

import re
import threading
import warnings
from typing import Any, Dict, List, Optional, Tuple

_TEXT_LIMIT = 200_000

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


def _np(t: Any):
    import numpy as np

    if hasattr(t, "detach"):
        t = t.detach().cpu()
        return t.float().numpy() if t.is_floating_point() else t.numpy()
    return np.asarray(t)


def _has(tensors: Any, key: str) -> bool:
    return tensors is not None and key in tensors.keys()


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


def _decode(tokenizer: Any, ids: Any) -> str:
    return tokenizer.decode([int(x) for x in ids], skip_special_tokens=True)[:_TEXT_LIMIT]


_PER_TOKEN = (("token_logprobs", "old_log_probs"), ("token_advantages", "advantages"), ("token_entropies", "entropys"))


def _token_arrays(tensors: Any) -> Dict[str, Any]:
    """responses and verl's per-token values (sampling log-probs, advantages, entropies) as numpy, once per batch."""
    out = {"token_ids": _np(tensors["responses"])}
    for name, key in _PER_TOKEN:
        if _has(tensors, key):
            out[name] = _np(tensors[key])
    return out


def _row(arrays: Dict[str, Any], i: int) -> Dict[str, Any]:
    return {name: vals[i] for name, vals in arrays.items()}


def _token_fields(row_arrays: Dict[str, Any], tokenizer: Any, keep: Any) -> Dict[str, Any]:
    """Turn fields: the token ids at positions `keep` of one row and the per-token values for them; texts with a tokenizer."""
    row: Dict[str, Any] = {"token_ids": [int(x) for x in row_arrays["token_ids"][keep]]}
    for name, vals in row_arrays.items():
        if name != "token_ids":
            row[name] = [float(x) for x in vals[keep]]
    if tokenizer is not None:
        row["token_texts"] = [tokenizer.decode([t]) for t in row["token_ids"]]
    return row


# ---------------------------------------------------------------- verl-agent: one row per turn


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


def _prompt_keep(tensors: Any, i: int) -> Any:
    """The prompt's non-padding positions (verl left-pads prompts; attention_mask covers prompt + response)."""
    p = _np(tensors["prompts"][i])
    if _has(tensors, "attention_mask"):
        return _np(tensors["attention_mask"][i])[: len(p)] > 0
    return p == p


# ---------------------------------------------------------------- verl: one row per trajectory


def _runs(mask: Any) -> List[Tuple[int, int]]:
    """[start, end) of each run of 1s."""
    out: List[Tuple[int, int]] = []
    start = None
    for j, m in enumerate(mask):
        if m and start is None:
            start = j
        elif not m and start is not None:
            out.append((start, j))
            start = None
    if start is not None:
        out.append((start, len(mask)))
    return out


def _row_turns(mask: Any, rewards: Any, adv: Any, tokens: Optional[Dict[str, Any]], prompt: Any,
               tokenizer: Any) -> Optional[List[Dict[str, Any]]]:
    """One agent-loop output (1-D arrays over its response tokens) -> its turns, or None when no token
    is the model's. A turn's reward is the sum over its tokens and the tool tokens after it."""
    runs = _runs(mask)
    if not runs:
        return None
    width = len(mask)
    turns: List[Dict[str, Any]] = []
    for k, (s, e) in enumerate(runs):
        nxt = runs[k + 1][0] if k + 1 < len(runs) else width
        lo = 0 if k == 0 else s
        turn: Dict[str, Any] = {
            "observation": "",
            "action": "",
            # the turn's tokens and the tool tokens after it; the first turn also takes any leading tool tokens
            "reward": float(rewards[lo:nxt].sum()),
            "tokenCount": e - s,
            "turn_index": k,
        }
        if adv is not None:
            turn["advantage"] = float(adv[s:e].mean())
        if tokens is not None:
            turn.update(_token_fields(tokens, tokenizer, slice(s, e)))
            if tokenizer is not None:
                turn["action"] = _decode(tokenizer, tokens["token_ids"][s:e])
                if k + 1 < len(runs) and nxt > e:
                    turn["tool_response"] = _decode(tokenizer, tokens["token_ids"][e:nxt])
        turns.append(turn)
    if tokenizer is not None:
        if prompt is not None:
            turns[0]["observation"] = _decode(tokenizer, prompt)
        for k in range(1, len(turns)):
            turns[k]["observation"] = turns[k - 1].pop("tool_response", "")
        turns[-1].pop("tool_response", None)
    turns[-1]["done"] = True
    return turns


def _loop_groups(tensors: Any, nt: Dict[str, Any], tokenizer: Any) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    if not _has(tensors, "response_mask"):
        raise KeyError("batch['response_mask'] is missing: cannot tell the model's tokens from tool tokens")
    mask = _np(tensors["response_mask"]) > 0
    n = mask.shape[0]
    uids = _col(nt, "uid", n, KeyError)
    reward_key = next((k for k in ("token_level_rewards", "token_level_scores", "rm_scores") if _has(tensors, k)), None)
    if reward_key is None:
        raise KeyError("batch['token_level_rewards'] is missing: log the batch after the reward step (e.g. after compute_advantage)")
    tok_rewards = _np(tensors[reward_key]).astype("float64")
    adv = _np(tensors["advantages"]).astype("float64") if _has(tensors, "advantages") else None
    arrays = _token_arrays(tensors) if _has(tensors, "responses") else None
    extras = {k: _col(nt, k, n, None) for k in ("__num_turns__", "turn_scores", "tool_rewards")}
    groups: Dict[str, List[Dict[str, Any]]] = {}
    empty = 0
    # rows with a reward on a tool token: verl's token-level return-to-go estimators skip it
    off_mask = int(((tok_rewards != 0) & ~mask).any(axis=1).sum())
    for i in range(n):
        prompt = None
        if tokenizer is not None and _has(tensors, "prompts"):
            prompt = _np(tensors["prompts"][i])[_prompt_keep(tensors, i)]
        turns = _row_turns(mask[i], tok_rewards[i], adv[i] if adv is not None else None,
                           _row(arrays, i) if arrays else None, prompt, tokenizer)
        if turns is None:
            empty += 1  # no model token: nothing was trained on this row
            continue
        for key, col in extras.items():
            if col[i] is not None:
                turns[0][key.strip("_")] = col[i]
        score = float(tok_rewards[i].sum())
        groups.setdefault(str(uids[i]), []).append({"turns": turns, "reward": score, "success": score > 0})
    if not groups:
        raise ValueError("no row of the batch has a model token under response_mask")
    return groups, {"layout": "verl", "rows": n, "emptyRows": empty, "rewardOnToolTokens": off_mask}


def _convert(batch: Any, tokenizer: Any = None, observations: Optional[List[str]] = None,
             actions: Optional[List[str]] = None) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    tensors, nt = _parts(batch)
    if "uid" not in nt:
        raise KeyError("non_tensor_batch['uid'] is missing: this does not look like a verl training batch")
    if "traj_uid" in nt:
        return _agent_groups(tensors, nt, tokenizer, observations, actions)
    return _loop_groups(tensors, nt, tokenizer)


def batch_to_groups(batch: Any, tokenizer: Any = None, observations: Optional[List[str]] = None,
                    actions: Optional[List[str]] = None) -> Dict[str, List[Dict[str, Any]]]:
    """One training batch -> {uid: [trajectory {turns, reward, success}]} for `run.log_rollouts`.

    batch: a verl `DataProto` (or a dict with "batch" and "non_tensor_batch"); verl-agent batches
      (with traj_uid) must carry `mark_rollout`'s marks.
    tokenizer: decodes prompts / responses / tool tokens into observation and action text (optional).
    observations, actions: verl-agent only, per batch row text to store instead (optional).
    Each verl-agent turn keeps its traj_uid (in the turn's info).
    """
    return _convert(batch, tokenizer, observations, actions)[0]


# ---------------------------------------------------------------- the trainer's estimator


def _get(cfg: Any, path: str, default: Any = None) -> Any:
    cur = cfg
    for part in path.split("."):
        if cur is None:
            return default
        try:
            cur = cur.get(part) if hasattr(cur, "get") else getattr(cur, part, None)
        except Exception:  # OmegaConf struct mode or missing interpolation
            cur = None
    if cur is None:
        return default
    return getattr(cur, "value", cur)  # verl's AdvantageEstimator enum


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
    algo = _get(config, "algorithm") if _get(config, "algorithm") is not None else config
    name = str(_get(algo, "adv_estimator", "gae")).lower()
    gamma = float(_get(algo, "gamma", 1.0))
    lam = float(_get(algo, "lam", 1.0))
    norm_std = bool(_get(algo, "norm_adv_by_std_in_grpo", True))
    kl_in_reward = bool(_get(algo, "use_kl_in_reward", False))
    trainer = "verl-agent" if layout == "verl-agent" else "verl"
    own: Dict[str, Any] = {"adv_estimator": name, "gamma": gamma, "lam": lam, "norm_adv_by_std_in_grpo": norm_std,
                           "use_kl_in_reward": kl_in_reward}

    def cannot(note: str) -> Tuple[str, Dict[str, Any]]:
        return f"{trainer}:{name}", {"trainer": own, "note": note}

    if layout == "verl-agent":
        actor = _get(config, "actor_rollout_ref.actor")
        use_pen = bool(_get(actor, "use_invalid_action_penalty", True))
        coef = float(_get(actor, "invalid_action_penalty_coef", 0.1))
        gigpo = _get(algo, "gigpo")
        similar = bool(_get(gigpo, "enable_similarity", False))
        own.update({"use_invalid_action_penalty": use_pen, "invalid_action_penalty_coef": coef})
        if name == "gigpo":
            own["gigpo"] = _plain(gigpo) if gigpo is not None else None
        if similar and name == "gigpo" and bool(_get(config, "trainer.balance_batch", True)):
            own["balance_batch"] = True
            return cannot("Similarity clustering is greedy in batch order, which _balance_batch shuffles; TurnLens clusters in rollout order.")
        if kl_in_reward and name in ("gigpo", "grpo"):
            return cannot("The KL penalty is folded into the trained rewards per token, which the stored env rewards do not carry.")
        # the penalty is subtracted in the trainer's compute step, after the env rewards stored here
        params = {"gamma": gamma, "invalidPenalty": coef if use_pen else 0.0, "perTrajectory": False, "epsilon": 1e-6,
                  "anchorMatch": "similarity" if similar else "exact",
                  "similarityThreshold": float(_get(gigpo, "similarity_thresh", 0.95))}
        if name == "gigpo":
            mode = str(_get(gigpo, "mode", "mean_norm"))
            if mode not in ("mean_norm", "mean_std_norm"):
                return cannot(f"GiGPO mode {mode!r} is not one TurnLens implements.")
            return "gigpo", {**params, "omega": float(_get(gigpo, "step_advantage_w", 1.0)), "mode": mode}
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


def log_verl_step(run: Any, batch: Any, step: int, tokenizer: Any = None, config: Any = None,
                  estimator: Optional[str] = None, params: Optional[Dict[str, Any]] = None) -> None:
    """Logs one training batch (call it after `compute_advantage`): returns at once.

    config: the trainer's config (`self.config`); labels the step with the estimator and parameters
      the trainer used (see `training_estimator`). estimator/params: given explicitly instead.
    A verl-agent batch must carry `mark_rollout`'s marks; copies `adjust_batch` made are dropped. The
    trainer's statistics counted them: GiGPO (and verl-agent's GRPO, GiGPO with omega 0) gets them as
    `params.rowCopies`, so the recompute still equals what trained; for another estimator such a step
    is labelled "verl-agent:<name>" (the TurnLens estimator that matches the other groups in its params).
    Never raises into the trainer: a batch that cannot be logged is warned about and dropped."""
    try:
        groups, meta = _convert(batch, tokenizer)
        _send(run, step, groups, meta, config, estimator, params)
    except Exception as e:  # a logging failure must not stop training
        _warn_dropped(step, e)


def _warn_dropped(step: Any, e: BaseException) -> None:
    warnings.warn(f"turnlens: the rollouts of step {step} were not logged ({type(e).__name__}: {e})", stacklevel=3)


def _send(run: Any, step: int, groups: Dict[str, List[Dict[str, Any]]], meta: Dict[str, Any], config: Any,
          estimator: Optional[str], params: Optional[Dict[str, Any]]) -> None:
    """Labels converted groups with the trainer's estimator and sends them as one step."""
    diagnostics: Dict[str, Any] = {"verl": {k: v for k, v in meta.items() if k != "copiedGroups"}}
    if config is not None and estimator is None:
        estimator, params = training_estimator(config, meta["layout"])
    if meta.get("multiOutputSessions") and estimator and ":" not in estimator:
        algo = _get(config, "algorithm") if _get(config, "algorithm") is not None else config
        name = str(_get(algo, "adv_estimator", estimator)).lower()
        # only verl's GRPO (not grpo_vectorized, not the others) credits a session by its final output alone
        if name not in ("grpo", "drgrpo"):
            params = {"trainer": {"turnlens_estimator": estimator, "turnlens_params": params},
                      "note": (f"{meta['multiOutputSessions']} sessions have several agent-loop outputs; verl's v1 trainer credits "
                               f"each output as its own sample of the group under {name}, while TurnLens stores a session as one "
                               "trajectory")}
            estimator = f"verl:{name}"
    if meta.get("rewardOnToolTokens") and estimator == "reinforcepp":
        params = {"trainer": {"turnlens_estimator": estimator, "turnlens_params": params},
                  "note": (f"{meta['rewardOnToolTokens']} rows carry their reward on a tool token, which verl's token-level "
                           "return skips; TurnLens counts it in the trajectory score")}
        estimator = f"verl:{estimator}"
    if meta.get("copiedGroups") and estimator == "gigpo":
        # GiGPO counts each copied turn once per copy in its statistics (params.rowCopies), as the trainer did
        diagnostics["verl"]["copiedGroups"] = meta["copiedGroups"]
        params = dict(params or {}, rowCopies=[[uid, ti, k, t["batch_copies"]] for uid, trajs in groups.items()
                                               for ti, traj in enumerate(trajs) for k, t in enumerate(traj["turns"]) if t.get("batch_copies")])
    elif meta.get("copiedGroups") and estimator and ":" not in estimator:
        diagnostics["verl"]["copiedGroups"] = meta["copiedGroups"]
        params = {"trainer": {"turnlens_estimator": estimator, "turnlens_params": params},
                  "note": (f"adjust_batch copied {meta['copiesDropped']} rows (groups {', '.join(meta['copiedGroups'][:5])}"
                           f"{'...' if len(meta['copiedGroups']) > 5 else ''}) and the trainer's group statistics counted the copies; "
                           "the other groups recompute exactly with the TurnLens estimator in trainer.turnlens_estimator")}
        estimator = f"verl-agent:{estimator}"
    run.log_rollouts(step, groups, estimator=estimator, params=params, diagnostics=diagnostics)


# ---------------------------------------------------------------- verl's v1 trainer: one row per agent-loop output

# What the v1 trainer's TransferQueue holds for each output once its advantage step has run (absent ones are skipped).
_V1_FIELDS = ["uid", "prompts", "responses", "response_mask", "rm_scores", "token_level_rewards", "advantages",
              "old_log_probs", "entropy", "num_turns", "extra_fields"]
_V1_PER_TOKEN = (("token_logprobs", "old_log_probs"), ("token_advantages", "advantages"), ("token_entropies", "entropy"))
_V1_EXTRAS = ("turn_scores", "tool_rewards", "reward_extra_info")
# verl's AgentLoopWorkerTQ keys each output "{prompt uid}_{session}_{output index}"
_OUTPUT_KEY = re.compile(r"^(.+)_(\d+)_(\d+)$")


def _rows(value: Any) -> List[Any]:
    """One TransferQueue field as per-row values: jagged tensors unbound, tensors as numpy."""
    import torch

    if isinstance(value, torch.Tensor):
        return [_np(t) for t in (value.unbind() if value.is_nested else value)]
    return list(value.tolist()) if hasattr(value, "tolist") else list(value)  # NonTensorStack


def v1_groups(keys: List[str], fields: Dict[str, List[Any]], tokenizer: Any = None) -> Tuple[Dict[str, List[Dict[str, Any]]], Dict[str, Any]]:
    """verl's v1 trainer batch -> ({uid: [trajectory]}, diagnostics): one trajectory per session.

    keys: the batch keys, "{uid}_{session}_{index}"; fields: {name: per-row values in key order}
    (response_mask, rm_scores or token_level_rewards, and optionally responses, prompts, advantages,
    old_log_probs, entropy, num_turns, extra_fields). A session's outputs are its turns in index
    order (each output split into turns by response_mask). verl copies the final output's score onto
    the earlier outputs and its GRPO credits a session by the final output alone, so only the final
    output's turns carry reward; an earlier output keeps its copied score as `output_score`."""
    if "response_mask" not in fields:
        raise KeyError("response_mask is missing: cannot tell the model's tokens from tool tokens")
    reward_key = next((k for k in ("token_level_rewards", "rm_scores") if k in fields), None)
    if reward_key is None:
        raise KeyError("rm_scores is missing: log the batch after the reward step")
    uids = fields.get("uid")
    sessions: Dict[Tuple[str, str], List[Tuple[int, int]]] = {}
    for i, key in enumerate(keys):
        m = _OUTPUT_KEY.match(str(key))
        if m:
            sessions.setdefault((m.group(1), m.group(2)), []).append((int(m.group(3)), i))
        else:  # not an agent-loop key: the row is its own session
            sessions.setdefault((str(uids[i]) if uids is not None else str(key), str(key)), []).append((0, i))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    multi = empty = off_mask = 0
    for (uid, _), outs in sorted(sessions.items(), key=lambda kv: (kv[0][0], int(kv[0][1]) if kv[0][1].isdigit() else 0, kv[0][1])):
        outs.sort()
        turns: List[Dict[str, Any]] = []
        for j, (idx, i) in enumerate(outs):
            mask = fields["response_mask"][i] > 0
            rewards = fields[reward_key][i].astype("float64")
            off_mask += bool(((rewards != 0) & ~mask).any())
            tokens = None
            if "responses" in fields:
                tokens = {"token_ids": fields["responses"][i]}
                tokens.update({name: fields[key][i] for name, key in _V1_PER_TOKEN if key in fields})
            adv = fields["advantages"][i].astype("float64") if "advantages" in fields else None
            prompt = fields["prompts"][i] if tokenizer is not None and "prompts" in fields else None
            out = _row_turns(mask, rewards, adv, tokens, prompt, tokenizer)
            if out is None:
                empty += 1  # no model token: nothing was trained on this output
                continue
            for t in out:
                t["output_index"] = idx
            if "num_turns" in fields:
                out[0]["num_turns"] = fields["num_turns"][i]
            extra = fields["extra_fields"][i] if "extra_fields" in fields else None
            if isinstance(extra, dict):
                out[0].update({k: extra[k] for k in _V1_EXTRAS if extra.get(k) is not None})
            if j < len(outs) - 1:
                out[0]["output_score"] = sum(t["reward"] for t in out)
                for t in out:
                    t["reward"] = 0.0
                del out[-1]["done"]
            turns += out
        if not turns:
            continue
        for k, t in enumerate(turns):
            t["turn_index"] = k
        multi += len(outs) > 1
        score = float(fields[reward_key][outs[-1][1]].astype("float64").sum())
        groups.setdefault(uid, []).append({"turns": turns, "reward": score, "success": score > 0})
    if not groups:
        raise ValueError("no output of the batch has a model token under response_mask")
    return groups, {"layout": "verl", "rows": len(keys), "sessions": sum(len(v) for v in groups.values()),
                    "multiOutputSessions": multi, "emptyRows": empty, "rewardOnToolTokens": off_mask}


# ---------------------------------------------------------------- verl's trainers: the advantage hooks

# The installed hook's settings (run, config, tokenizer, every); empty when none is installed. The
# wrappers read it, so installing again replaces the settings and never wraps twice.
_hook: Dict[str, Any] = {}
# Set while the v1 trainer's advantage step runs: the ray_trainer.compute_advantage it reaches (through
# v1/utils.py, which may have bound the wrapper) is logged by the v1 hook, not again by the legacy one.
_local = threading.local()


def _patch(owner: Any, name: str, make: Any) -> None:
    cur = getattr(owner, name)
    if getattr(cur, "_turnlens_orig", None) is None:
        wrapper = make(cur)
        wrapper._turnlens_orig = cur
        setattr(owner, name, wrapper)


def _unpatch(owner: Any, name: str) -> None:
    orig = getattr(getattr(owner, name, None), "_turnlens_orig", None)
    if orig is not None:
        setattr(owner, name, orig)


def _legacy_wrapper(orig: Any) -> Any:
    def compute_advantage(data, *args, **kwargs):
        out = orig(data, *args, **kwargs)
        if _hook and not getattr(_local, "v1", False):
            _hook["calls"] += 1
            step = (getattr(out, "meta_info", None) or {}).get("global_steps", _hook["calls"])
            try:
                if int(step) % _hook["every"] == 0:
                    cfg = _hook["config"] if _hook["config"] is not None else kwargs.get("config")
                    if cfg is None:  # the trainer passed its settings one by one
                        est = kwargs.get("adv_estimator", args[0] if args else None)
                        cfg = {"adv_estimator": est, "gamma": kwargs.get("gamma", 1.0), "lam": kwargs.get("lam", 1.0),
                               "norm_adv_by_std_in_grpo": kwargs.get("norm_adv_by_std_in_grpo", True),
                               # verl-agent's compute_advantage takes GiGPO's settings as keywords
                               "gigpo": {"mode": kwargs.get("gigpo_mode", "mean_std_norm"), "step_advantage_w": kwargs.get("step_advantage_w", 1.0),
                                         "enable_similarity": kwargs.get("gigpo_enable_similarity", False),
                                         "similarity_thresh": kwargs.get("gigpo_similarity_thresh", 0.95)}}
                    log_verl_step(_hook["run"], out, int(step), tokenizer=_hook["tokenizer"], config=cfg)
            except Exception as e:  # a logging failure must not stop training
                _warn_dropped(step, e)
        return out

    return compute_advantage


def _v1_wrapper(orig: Any) -> Any:
    def _compute_advantage(self, batch, *args, **kwargs):
        inside = getattr(_local, "v1", False)
        _local.v1 = True
        try:
            out = orig(self, batch, *args, **kwargs)
        finally:
            _local.v1 = inside
        if _hook and not inside:
            try:
                _log_v1(self, batch)
            except Exception as e:  # a logging failure must not stop training
                _warn_dropped(getattr(self, "global_steps", "?"), e)
        return out

    return _compute_advantage


def _log_v1(trainer: Any, batch: Any) -> None:
    """Reads the batch back from the trainer's TransferQueue (the advantage step keeps only uid, masks
    and scores in hand) and logs it at the trainer's global step. With parameter_sync_step > 1 a
    training step runs its advantage step once per mini-batch: the parts are sent together as one step."""
    import transfer_queue as tq

    step = int(trainer.global_steps)
    if step % _hook["every"]:
        return
    keys = [k for k, tag in zip(batch.keys, batch.tags) if not (tag or {}).get("is_padding", False)]  # the upsampling rows
    data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=_V1_FIELDS)
    fields = {name: _rows(data.get(name)) for name in data.keys()}
    tokenizer = _hook["tokenizer"] if _hook["tokenizer"] is not None else getattr(trainer, "tokenizer", None)
    config = _hook["config"] if _hook["config"] is not None else getattr(trainer, "config", None)
    groups, meta = v1_groups(keys, fields, tokenizer)
    parts = max(1, int(getattr(trainer, "parameter_sync_step", 1) or 1))
    if parts > 1:
        pending = getattr(trainer, "_turnlens_pending", None)
        if pending is not None and pending["step"] != step:
            _warn_dropped(pending["step"], RuntimeError(f"{len(pending['parts'])} of its {parts} mini-batches reached the advantage step"))
            pending = None
        if pending is None:
            pending = trainer._turnlens_pending = {"step": step, "parts": []}
        pending["parts"].append((groups, meta))
        if len(pending["parts"]) < parts:
            return
        trainer._turnlens_pending = None
        groups, meta = _merge_parts(pending["parts"])
    _send(_hook["run"], step, groups, meta, config, None, None)


def _merge_parts(parts: List[Tuple[Dict[str, Any], Dict[str, Any]]]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The mini-batches of one step as one step; a prompt in two mini-batches was two groups to the trainer."""
    groups: Dict[str, Any] = {}
    meta: Dict[str, Any] = {"layout": "verl", "miniBatches": len(parts)}
    for p, (g, m) in enumerate(parts):
        for uid, trajs in g.items():
            groups[uid if uid not in groups else f"{uid}@{p}"] = trajs
        for k, v in m.items():
            if isinstance(v, int):
                meta[k] = meta.get(k, 0) + v
    return groups, meta


def hook_compute_advantage(run: Any, config: Any = None, tokenizer: Any = None, every: int = 1) -> Any:
    """Logs every training step verl's trainer passes through its advantage step, without editing the trainer.

    The v1 trainer (`trainer.use_v1`, verl's default): wraps `PPOTrainer._compute_advantage`; after it,
    the batch is read back from the trainer's TransferQueue and logged at the trainer's `global_steps`
    (a resumed trainer continues its numbering; resume the TurnLens run with `turnlens.init(resume=...)`),
    with prompt and response text (the trainer's tokenizer) and token ids, one trajectory per session.
    The legacy RayPPOTrainer: wraps `verl.trainer.ppo.ray_trainer.compute_advantage`, which its fit calls
    by that name; the step is the batch's meta_info["global_steps"] when present, else counted from 1.
    config, tokenizer: default to the v1 trainer's own; for the legacy trainer without config the
      estimator is read from the call's arguments (enough for verl; verl-agent's invalid-action
      penalty is not among them: pass config there).
    every: log the steps divisible by it.
    Installing again replaces the run and settings (each step is still logged once); logging never
    raises into the trainer (a step it cannot log is warned about and dropped). Call it in the process
    that runs `fit` (verl's TaskRunner). Returns a function that undoes it."""
    import importlib

    _hook.update(run=run, config=config, tokenizer=tokenizer, every=max(1, int(every)), calls=_hook.get("calls", 0))
    ray_trainer = importlib.import_module("verl.trainer.ppo.ray_trainer")
    _patch(ray_trainer, "compute_advantage", _legacy_wrapper)
    try:
        v1 = importlib.import_module("verl.trainer.ppo.v1.trainer_base")
    except ImportError:  # verl without the v1 trainer, or without its TransferQueue
        v1 = None
    if v1 is not None:
        _patch(v1.PPOTrainer, "_compute_advantage", _v1_wrapper)

    def restore() -> None:
        _hook.clear()
        _unpatch(ray_trainer, "compute_advantage")
        if v1 is not None:
            _unpatch(v1.PPOTrainer, "_compute_advantage")

    return restore
