"""slime's debug dumps: `--save-debug-rollout-data` and `--save-debug-train-data` (or `--dump-details DIR`,
which sets both to DIR/rollout_data/{rollout_id}.pt and DIR/train_data/{rollout_id}.pt).

Read at THUDM/slime 624b824. The rollout dump (slime/observability/rollout_data_utils.py
save_debug_rollout_data) is
`torch.save({"rollout_id", "samples": [Sample.to_dict()]})`: each sample's group_index, index, prompt
(text or messages), tokens (prompt then response), response (text), response_length, reward (a number,
or a dict that --reward-key picks from), loss_mask (one per response token: 1 on the model's tokens, 0
on tool or environment tokens), rollout_log_probs, status, metadata. Evaluation rollouts are written as
eval_{rollout_id}.pt; they were not trained on and are reported, not imported.
The train dump (slime/observability/train_data_utils.py, format_version 2) is one file per rollout:
`samples` in rollout order, each with sample_index (Sample.index), rollout_position (its place in the
rollout dump's samples), and its training fields: tokens, response_lengths, loss_masks, rewards (the
reward after slime's group normalisation), and per response token log_probs, ref_log_probs, advantages,
returns, kl, entropy, rollout_log_probs; whole-batch raw_reward at the top.

A training rollout is a step (step = rollout_id); each sample a trajectory; its group is its
group_index (slime's GRPO normalises n_samples_per_prompt consecutive samples: one group_index). Each
run of loss_mask = 1 in the response is a turn: tokenIds, tokenLogprobs (rollout_log_probs),
tokenAdvantages and tokenEntropies from the train dump, the other per-token fields (log_probs,
ref_log_probs, kl, returns, values) in info.tokens; the tokens before a turn are its observation's ids
(info.observationTokenIds). The prompt is the first turn's observation; a sample with one turn has the
response as its action, one with several keeps the response text in the first turn's info.response
(slime records one text for the whole response). The reward (Sample.reward, what slime normalises) is on
the last turn; a truncated sample is a truncated trajectory. A sample with no loss-masked token (removed)
is one turn over its whole response, info.trained false.
Estimator: the stored advantages (each sample's first trained token) are recomputed from the rewards
and groups: TurnLens's grpo with epsilon 1e-6 (slime's `(r - mean) / (std + 1e-6)`, unbiased std) or
drgrpo (--disable-grpo-std-normalization) labels the step when it reproduces every sample; else
"slime:grpo" when they are the rewards the train dump holds (a group of one; a batch that is not
n_samples_per_prompt x rollout_batch_size samples, which slime normalises as one group;
--disable-rewards-normalization), else
"slime:advantages" (ppo, reinforce++, --normalize-advantages, a custom function). Without a train dump
the step has no advantages ("slime:rollout").
Files are read with torch.load(weights_only=True); a file that needs full unpickling (numpy arrays or
objects in metadata) is reported unless TURNLENS_SLIME_TRUST_PICKLE=1 (only for files you trust: a
pickle can run code). Requires torch.
PATH: the dump folder (searched for *.pt), or one rollout dump file.
"""

import hashlib
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import shapes
from .base import Source, unsupported

_READS = "slime's debug dumps ({rollout_id}.pt from --save-debug-rollout-data, with --save-debug-train-data's files beside them)"
_EPS = 1e-6  # slime's _post_process_rewards: rewards / (std + 1e-6)
_TOL = 2e-4
_ID = re.compile(r"(eval_)?(\d+)")
_TURN_ARRAYS = {"rollout_log_probs": "tokenLogprobs", "advantages": "tokenAdvantages", "entropy": "tokenEntropies"}
_INFO_ARRAYS = ("log_probs", "ref_log_probs", "kl", "returns", "values", "teacher_log_probs")


def _load(f: Path) -> Any:
    import pickle

    import torch

    try:
        return torch.load(f, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        if os.environ.get("TURNLENS_SLIME_TRUST_PICKLE") == "1":
            return torch.load(f, map_location="cpu", weights_only=False)
        raise


def _list(v: Any) -> Any:
    return v.tolist() if hasattr(v, "tolist") else v


def _seq(v: Any, n: int, name: str) -> Optional[List[Any]]:
    if v is None:
        return None
    v = _list(v)
    if not isinstance(v, list) or len(v) != n:
        raise shapes.ShapeError(f"{name}: expected {n} values (one per response token), got {len(v) if isinstance(v, list) else type(v).__name__}")
    return v




def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n\n".join(f"{m.get('role', '')}: {m.get('content', '')}" if isinstance(m, dict) else str(m) for m in prompt)
    return "" if prompt is None else str(prompt)


def _reward(s: Dict[str, Any], raw: Optional[float]) -> float:
    r = s.get("reward")
    if isinstance(r, (int, float)) and not isinstance(r, bool):
        return float(r)
    if raw is not None:
        return raw
    raise shapes.ShapeError(f"reward: {type(r).__name__} (slime picks one of a dict's rewards with --reward-key); "
                            "the train dump's raw_reward is needed")


def trajectory(s: Dict[str, Any], t: Optional[Dict[str, Any]], raw: Optional[float]) -> Tuple[Dict[str, Any], float, Optional[float]]:
    """(trajectory, reward, stored advantage of its first trained token) of one rollout sample and its train row."""
    tokens = _list(s.get("tokens"))
    n = s.get("response_length")
    if not isinstance(tokens, list) or not tokens:
        raise shapes.ShapeError("tokens: expected a non-empty list of token ids")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= len(tokens):
        raise shapes.ShapeError(f"response_length: expected 1..{len(tokens)} (the response's tokens), got {n!r}")
    if t is not None and _list(t.get("tokens")) not in (None, tokens):
        raise shapes.ShapeError("tokens: the train dump's tokens differ from the rollout dump's (not the same sample)")
    # the train dump's mask is what was trained on (slime zeroes a removed sample's); the rollout's otherwise
    mask = (_seq(t.get("loss_masks"), n, "loss_masks") if t is not None else None) or _seq(s.get("loss_mask"), n, "loss_mask") or [1] * n
    response, cut = tokens[len(tokens) - n:], len(tokens) - n
    cols: Dict[str, List[Any]] = {}
    v = _seq(s.get("rollout_log_probs"), n, "rollout_log_probs")
    if v is not None:
        cols["rollout_log_probs"] = v
    for k in ("advantages", "entropy", *_INFO_ARRAYS):
        v = _seq(t.get(k), n, k) if t is not None else None
        if v is not None:
            cols[k] = v
    segs = shapes.mask_runs(mask)
    trained = bool(segs)
    segs = segs or [(0, n)]
    reward = _reward(s, raw)
    turns = []
    prev = 0
    for i, (a, b) in enumerate(segs):
        info: Dict[str, Any] = {"observationTokenIds": (tokens[:cut] if i == 0 else []) + response[prev:a]}
        turn: Dict[str, Any] = {"observation": _prompt_text(s.get("prompt")) if i == 0 else "", "reward": 0.0,
                                "tokenIds": response[a:b]}
        if len(segs) == 1:
            turn["action"] = s.get("response") or ""
        elif i == 0:
            info["response"] = s.get("response") or ""
        extra = {}
        for k, vals in cols.items():
            if k in _TURN_ARRAYS:
                turn[_TURN_ARRAYS[k]] = vals[a:b]
            else:
                extra[k] = vals[a:b]
        if extra:
            info["tokens"] = extra
        adv = cols.get("advantages", [])[a:b]
        if adv:
            turn["advantage"] = float(adv[0]) if max(adv) == min(adv) else sum(adv) / len(adv)
            if max(adv) != min(adv):
                info["advantageIsTokenMean"] = True
        if not trained:
            info["trained"] = False
        if i == len(segs) - 1:
            turn["reward"] = reward
            turn["done"] = True
            info.update({k: s.get(k) for k in ("index", "group_index", "status", "label") if s.get(k) is not None})
            if s.get("metadata"):
                info["metadata"] = s["metadata"]
            if t is not None and t.get("rewards") is not None:
                info["normalizedReward"] = float(_list(t["rewards"]))
        turn["info"] = info
        turns.append(shapes.turn_body(turn, f"turns[{i}]"))
        prev = b
    first = cols["advantages"][segs[0][0]] if "advantages" in cols else None
    return ({"turns": turns, "reward": reward, "truncated": s.get("status") == "truncated"}, reward,
            None if first is None else float(first))


def _grpo(rs: Sequence[float], std_norm: bool) -> List[float]:
    m = sum(rs) / len(rs)
    if not std_norm:
        return [r - m for r in rs]
    if len(rs) == 1:
        return [r / (1 + _EPS) for r in rs]  # TurnLens's group of one (slime's torch.std of one value is nan)
    s = math.sqrt(sum((r - m) ** 2 for r in rs) / (len(rs) - 1))
    return [(r - m) / (s + _EPS) for r in rs]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL * (1 + abs(b))


def label(rows: List[Tuple[str, float, Optional[float], Optional[float]]]) -> Tuple[str, Dict[str, Any]]:
    """The step's estimator from its samples' (group, reward, stored advantage, normalised reward)."""
    if any(adv is None for _, _, adv, _ in rows):
        return "slime:rollout", {"note": "no train dump (--save-debug-train-data) beside this rollout: the advantages were not saved"}
    groups: Dict[str, List[int]] = {}
    for i, (g, _, _, _) in enumerate(rows):
        groups.setdefault(g, []).append(i)
    for name, std_norm in (("grpo", True), ("drgrpo", False)):
        ok = True
        for idx in groups.values():
            pred = _grpo([rows[i][1] for i in idx], std_norm)
            ok = ok and all(_close(p, rows[i][2]) for p, i in zip(pred, idx))  # type: ignore[arg-type]
        if ok:
            return name, ({"epsilon": _EPS} if std_norm else {})
    if all(norm is not None and _close(norm, adv) for _, _, adv, norm in rows):  # type: ignore[arg-type]
        return "slime:grpo", {"note": (
            "the advantages are the rewards slime passed to grpo, gspo or cispo, which TurnLens's grpo does not reproduce "
            "here: a group of one, a batch not of n_samples_per_prompt x rollout_batch_size samples (slime then normalises "
            "over the whole batch), or --disable-rewards-normalization")}
    return "slime:advantages", {"note": (
        "the advantages are not the group-normalised rewards: ppo, reinforce_plus_plus, --normalize-advantages or a custom "
        "advantage function; TurnLens cannot recompute them from the dump")}


def _scan(p: Path) -> Tuple[Dict[int, Tuple[Path, Any]], Dict[int, Tuple[Path, Any]], List[Tuple[str, str]]]:
    """({rollout_id: rollout dump}, {rollout_id: train dump}, [(file, why not read)])."""
    import pickle

    rollouts: Dict[int, Tuple[Path, Any]] = {}
    trains: Dict[int, Tuple[Path, Any]] = {}
    bad: List[Tuple[str, str]] = []
    files = [p] if p.is_file() else sorted(p.rglob("*.pt"))
    for f in files:
        where = str(f.relative_to(p)) if f != p else f.name
        try:
            data = _load(f)
        except pickle.UnpicklingError as e:
            found = re.search(r"Unsupported global: GLOBAL (\S+)", str(e))
            what = f"it holds {found.group(1)}" if found else str(e).splitlines()[0][:200]
            bad.append((where, f"not loadable with weights_only=True ({what}); set TURNLENS_SLIME_TRUST_PICKLE=1 to load "
                               "it with full unpickling, only for a file you trust"))
            continue
        except Exception as e:  # a truncated or foreign file: reported, the others still read
            bad.append((where, f"not readable with torch.load: {type(e).__name__}: {str(e)[:200]}"))
            continue
        if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
            bad.append((where, "not a slime debug dump (expected a dict with a samples list)"))
            continue
        m = _ID.search(f.stem)
        rid = data.get("rollout_id", int(m.group(2)) if m else None)
        if not isinstance(rid, int):
            bad.append((where, "rollout_id: missing"))
            continue
        if "format_version" in data or "dp_shards" in data:
            trains[rid] = (f, data)
        elif f.stem.startswith("eval_") or (m and m.group(1)):
            bad.append((where, "an evaluation rollout (eval_<id>.pt): not trained on, not imported"))
        else:
            rollouts[rid] = (f, data)
    return rollouts, trains, bad


def read(path: str, env_id: str = "external") -> List[Source]:
    """slime debug dumps (--save-debug-rollout-data / --save-debug-train-data .pt files): turns, token logprobs, advantages"""
    p = Path(path)
    if not p.exists() or (p.is_file() and p.suffix != ".pt") or (p.is_dir() and not any(p.rglob("*.pt"))):
        raise unsupported(path, "slime", _READS)
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise unsupported(path, "slime", _READS + "; reading them needs torch, which is not installed") from e
    rollouts, trains, bad = _scan(p)
    if not rollouts and not trains:
        raise unsupported(path, "slime", _READS)
    folder = p.parent if p.is_file() else p
    name = folder.parent.name if folder.name in ("rollout_data", "train_data") else folder.name  # --dump-details DIR's name
    src = Source(name=name, config={"source": "slime debug dumps"}, key=os.path.abspath(p), env_id=env_id, estimator="slime:grpo")
    for where, why in bad:
        src.reject(where, why)
    for rid in sorted(trains):
        if rid not in rollouts:
            src.reject(trains[rid][0].name, f"a train dump of rollout {rid} without its rollout dump ({rid}.pt from --save-debug-rollout-data)")
    for rid in sorted(rollouts):
        f, data = rollouts[rid]
        train = trains.get(rid, (None, None))[1]
        samples = data["samples"]
        by_pos: Dict[int, Dict[str, Any]] = {}
        by_index: Dict[Any, Dict[str, Any]] = {}
        raw_all = _list(train.get("raw_reward")) if train else None
        for row in (train or {}).get("samples", []):
            if isinstance(row, dict):
                if isinstance(row.get("rollout_position"), int):
                    by_pos[row["rollout_position"]] = row
                if row.get("sample_index") is not None:
                    by_index[row["sample_index"]] = row
        groups: Dict[str, List[Dict[str, Any]]] = {}
        rows: List[Tuple[str, float, Optional[float], Optional[float]]] = []
        for i, s in enumerate(samples):
            where = f"{f.name}:samples[{i}]"
            if not isinstance(s, dict):
                src.reject(where, "not a Sample.to_dict() dict")
                continue
            t = by_pos.get(i) if by_pos else by_index.get(s.get("index"))
            if train is not None and t is None:
                src.reject(where, f"no train row for it (rollout_position {i}, sample_index {s.get('index')!r}) in the train dump")
                continue
            raw = raw_all[i] if isinstance(raw_all, list) and i < len(raw_all) else None
            try:
                traj, reward, adv = trajectory(s, t, None if raw is None else float(raw))
            except shapes.ShapeError as e:
                src.reject(where, str(e))
                continue
            gi = s.get("group_index")
            g = f"group-{gi}" if gi is not None else "prompt-" + hashlib.sha1(repr(traj["turns"][0]["observation"]).encode()).hexdigest()[:16]
            groups.setdefault(g, []).append(traj)
            norm = _list(t.get("rewards")) if t is not None else None
            rows.append((g, reward, adv, None if norm is None else float(norm)))
        if groups:
            estimator, params = label(rows)
            src.add_step(shapes.step_body(rid, groups, env_id, estimator, params), len(rows), f.name)
    return [src]


read.native_suffixes = (".pt",)  # type: ignore[attr-defined]  # torch.save files are zips: read, not extracted
