"""verl's v1 trainer (verl 0.9's default): one row per agent-loop output, keyed "{uid}_{session}_{index}"
in the trainer's TransferQueue. `v1_groups` makes one trajectory of each session (its outputs' turns);
the hook's wrapper of `PPOTrainer._compute_advantage` reads the rows back after the trainer's advantage
step and logs them; `verl_hook.hook_compute_advantage` installs it.
"""

import re
from typing import Any, Dict, List, Tuple

from .verl_rows import _np, _row_turns
from .verl_step import _send, _warn_dropped


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


def _v1_wrapper(orig: Any, hook: Dict[str, Any], local: Any) -> Any:
    """orig, wrapped: logs the batch after it when a hook is installed (hook: its settings); local.v1
    is set while it runs, so the legacy wrapper it reaches does not log the step again."""

    def _compute_advantage(self, batch, *args, **kwargs):
        inside = getattr(local, "v1", False)
        local.v1 = True
        try:
            out = orig(self, batch, *args, **kwargs)
        finally:
            local.v1 = inside
        if hook and not inside:
            try:
                _log_v1(self, batch, hook)
            except Exception as e:  # a logging failure must not stop training
                _warn_dropped(getattr(self, "global_steps", "?"), e)
        return out

    return _compute_advantage


def _log_v1(trainer: Any, batch: Any, hook: Dict[str, Any]) -> None:
    """Reads the batch back from the trainer's TransferQueue (the advantage step keeps only uid, masks
    and scores in hand) and logs it at the trainer's global step. With parameter_sync_step > 1 a
    training step runs its advantage step once per mini-batch: the parts are sent together as one step."""
    import transfer_queue as tq

    step = int(trainer.global_steps)
    if step % hook["every"]:
        return
    keys = [k for k, tag in zip(batch.keys, batch.tags) if not (tag or {}).get("is_padding", False)]  # the upsampling rows
    data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=_V1_FIELDS)
    fields = {name: _rows(data.get(name)) for name in data.keys()}
    tokenizer = hook["tokenizer"] if hook["tokenizer"] is not None else getattr(trainer, "tokenizer", None)
    config = hook["config"] if hook["config"] is not None else getattr(trainer, "config", None)
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
    _send(hook["run"], step, groups, meta, config, None, None)


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
