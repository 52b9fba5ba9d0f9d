"""verl batches row by row: the conversion the verl-agent, verl and v1-trainer paths share.

Reads a batch's parts (a verl `DataProto`, or a dict {"batch": tensors, "non_tensor_batch": ...}),
turns a row's response tokens into turn fields (token ids, sampling log-probs, advantages,
entropies, texts), and splits one agent-loop output into its turns.

verl (volcengine/verl >= 0.6 agent loop, legacy RayPPOTrainer): one row per trajectory; the response
  interleaves the model's tokens (response_mask 1) with tool/environment tokens (response_mask 0). Each
  run of model tokens is one turn; the tool tokens after it are the next turn's observation. A turn's
  reward is the sum of token_level_rewards over its tokens and the tool tokens after it, so the turns
  of a trajectory add up to the score verl's estimators use.
"""

from typing import Any, Dict, List, Optional, Tuple

from ..shapes import mask_runs

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


def _np(t: Any):
    import numpy as np

    if hasattr(t, "detach"):
        t = t.detach().cpu()
        return t.float().numpy() if t.is_floating_point() else t.numpy()
    return np.asarray(t)


def _has(tensors: Any, key: str) -> bool:
    return tensors is not None and key in tensors.keys()


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


def _prompt_keep(tensors: Any, i: int) -> Any:
    """The prompt's non-padding positions (verl left-pads prompts; attention_mask covers prompt + response)."""
    p = _np(tensors["prompts"][i])
    if _has(tensors, "attention_mask"):
        return _np(tensors["attention_mask"][i])[: len(p)] > 0
    return p == p



def _row_turns(mask: Any, rewards: Any, adv: Any, tokens: Optional[Dict[str, Any]], prompt: Any,
               tokenizer: Any) -> Optional[List[Dict[str, Any]]]:
    """One agent-loop output (1-D arrays over its response tokens) -> its turns, or None when no token
    is the model's. A turn's reward is the sum over its tokens and the tool tokens after it."""
    runs = mask_runs(mask)
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
