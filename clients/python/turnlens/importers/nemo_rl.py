"""NeMo-RL's GRPO training data: `train_data_step<N>.jsonl` in the run's log dir.

NeMo-RL's GRPO loop (nemo_rl/algorithms/grpo.py, sync and async; read at NVIDIA-NeMo/RL 7ea279a) writes the batch it trained on at
each step through `Logger.log_batched_dict_as_jsonl`, one line per sample, each value the sample's
one-element slice of the batch: content (the conversation's message texts, no roles), rewards (the
total reward; with dynamic sampling the reward trained on is filtered_rewards), input_lengths (the
unpadded length), token_ids, token_loss_mask (1 on the tokens the model generated), sample_loss_mask,
advantages (per token), generation_logprobs (the sampler's), prev_logprobs (the policy's before the
update), optional agent_ref, and idx (the line's position). The file is written whole at the end of
step N (N = the step number, from 1); the env.should_log_nemo_gym_responses setting skips it.

Each line becomes a trajectory. Each run of token_loss_mask = 1 is a turn (one model reply): its
tokenIds, tokenLogprobs (generation_logprobs) and tokenAdvantages; prev_logprobs go to
info.tokens.prev_logprobs. The turn's advantage is its trained tokens' advantage (NeMo-RL's loss
multiplies each token's advantage by the mask; GRPO gives every token of a sample the same one; when
they differ, e.g. message-level penalties, the turn gets their mean and info.advantageIsTokenMean).
The reward is the sample's, on its last turn. Texts are matched by position as NeMo-RL's multi-turn
rollout appends messages: the prompt's messages, then per turn the model's reply and the environment's
answer; the prompt is the first turn's observation, each answer the next turn's. When the message
count does not fit that, the turns carry no text and the messages are kept in the first turn's
info.content.

Groups: NeMo-RL's baseline groups samples by their prompt's token ids over the whole batch
(calculate_baseline_and_std_per_prompt: torch.unique over the prompts), not by position (the
num_generations_per_prompt copies of a prompt are consecutive, but two dataset rows with the same
prompt share one baseline); so here a group is the samples whose tokens before the first trained
token are equal. Estimator: NeMo-RL's GRPO computes `r - baseline` with a leave-one-out baseline
(use_leave_one_out_baseline, default true) and, with normalize_rewards (default true), divides by
(std + 1e-6) where the std (Bessel-corrected, over the same samples as the baseline) is above 0; a
group of one gets advantage 0. The stored advantages are compared with TurnLens's grpo (epsilon 1e-6:
NeMo-RL without leave-one-out, normalised), rloo (leave-one-out, not normalised) and drgrpo (neither);
the first that reproduces every sample labels the step. Otherwise the step is "nemo-rl:grpo" with the
NeMo-RL setting that reproduces it (the default, leave-one-out and normalised, lands here: TurnLens
has no leave-one-out std), or a note that none does (advantage clipping, penalties, another estimator).
NeMo-RL's distillation writes the same file name with content and input_lengths only: such a file is
reported once, not line by line.
PATH: the log dir (each folder holding train_data_step*.jsonl is one run) or one such file.
"""

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import shapes
from .base import Source, is_text, json_objects, unsupported

_READS = "NeMo-RL's GRPO training data (train_data_step<N>.jsonl in the run's log dir)"
_FILE = re.compile(r"^train_data_step(\d+)\.jsonl$")
_EPS = 1e-6  # NeMo-RL's GRPOAdvantageEstimator: advantages / (std + 1e-6)
_TOL = 2e-4  # stored float32 values, and NeMo-RL's variance as E[x^2] - E[x]^2 in float32
# NeMo-RL's leave-one-out std of near-equal rewards loses digits in float32 (0.4% measured against its
# own function on random groups); naming its setting tolerates that, a TurnLens label does not.
_NEMO_TOL = 5e-3
ESTIMATOR = "nemo-rl:grpo"


def _files(p: Path) -> Dict[Path, List[Tuple[int, Path]]]:
    """{folder: [(step, file)]}: each folder of step files is one run."""
    if p.is_file():
        m = _FILE.match(p.name)
        return {p.parent: [(int(m.group(1)) if m else 0, p)]}
    out: Dict[Path, List[Tuple[int, Path]]] = {}
    for f in p.rglob("train_data_step*.jsonl"):
        m = _FILE.match(f.name)
        if m and f.is_file():
            out.setdefault(f.parent, []).append((int(m.group(1)), f))
    return {d: sorted(fs) for d, fs in sorted(out.items())}


def _one(row: Dict[str, Any], key: str, required: bool = True) -> Any:
    """The sample's value: each key holds the sample's one-element slice of the batch."""
    if key not in row:
        if required:
            raise shapes.ShapeError(f"{key}: required")
        return None
    v = row[key]
    if not isinstance(v, list) or len(v) != 1:
        raise shapes.ShapeError(f"{key}: expected a one-element list (the sample's slice of the batch)")
    return v[0]


def _numbers(row: Dict[str, Any], key: str, n: int, required: bool = True) -> Optional[List[float]]:
    v = _one(row, key, required)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) < n:
        raise shapes.ShapeError(f"{key}: expected a list of at least input_lengths ({n}) numbers")
    for i in range(n):
        if isinstance(v[i], bool) or not isinstance(v[i], (int, float)):
            raise shapes.ShapeError(f"{key}[{i}]: expected a number, got {v[i]!r}")
    return v[:n]


def _text(content: Any) -> str:
    """A message's content as text: a string as is, multimodal parts by their text, anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(c, dict) for c in content):
        return "".join(str(c.get("text", "")) for c in content if c.get("type", "text") == "text")
    return json.dumps(content, default=str)




def sample(row: Dict[str, Any]) -> Tuple[Dict[str, Any], str, float, float]:
    """(trajectory, group key, reward trained on, advantage of its first trained token) of one line."""
    n = _one(row, "input_lengths")
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise shapes.ShapeError(f"input_lengths: expected a positive integer, got {n!r}")
    ids = _one(row, "token_ids")
    if not isinstance(ids, list) or len(ids) < n or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids[:n]):
        raise shapes.ShapeError(f"token_ids: expected a list of at least input_lengths ({n}) token ids")
    ids = ids[:n]
    mask = _numbers(row, "token_loss_mask", n)
    adv = _numbers(row, "advantages", n)
    gen = _numbers(row, "generation_logprobs", n, required=False)
    prev = _numbers(row, "prev_logprobs", n, required=False)
    total = shapes.to_number(_one(row, "rewards"), "rewards")
    trained = total if "filtered_rewards" not in row else shapes.to_number(_one(row, "filtered_rewards"), "filtered_rewards")
    segs = shapes.mask_runs(mask)  # type: ignore[arg-type]
    if not segs:
        raise shapes.ShapeError("token_loss_mask: no token was trained on")
    content = _one(row, "content", required=False)
    msgs = content if isinstance(content, list) else []
    k = len(segs)
    p = len(msgs) - 2 * k if len(msgs) - 2 * k >= 1 else (1 if len(msgs) == 2 * k else 0)
    texts = p >= 1
    turns = []
    prev_end = 0
    for i, (a, b) in enumerate(segs):
        obs = ("\n\n".join(_text(m) for m in msgs[:p]) if i == 0 else _text(msgs[p + 2 * i - 1])) if texts else ""
        act = _text(msgs[p + 2 * i]) if texts else ""
        seg_adv = adv[a:b]  # type: ignore[index]
        info: Dict[str, Any] = {"observationTokenIds": ids[prev_end:a]}
        turn: Dict[str, Any] = {"observation": obs, "action": act, "reward": 0.0, "tokenIds": ids[a:b],
                                "tokenAdvantages": seg_adv}
        if max(seg_adv) == min(seg_adv):
            turn["advantage"] = float(seg_adv[0])
        else:
            turn["advantage"] = sum(seg_adv) / len(seg_adv)
            info["advantageIsTokenMean"] = True
        if gen is not None:
            turn["tokenLogprobs"] = gen[a:b]
        if prev is not None:
            info["tokens"] = {"prev_logprobs": prev[a:b]}
        if i == 0 and not texts and msgs:
            info["content"] = [_text(m) for m in msgs]
        if i == k - 1:
            turn["reward"] = trained
            turn["done"] = True
            if texts and p + 2 * k - 1 < len(msgs):  # the environment's answer to the last reply
                info["finalObservation"] = _text(msgs[p + 2 * k - 1])
            info["idx"] = row.get("idx")
            for key in ("sample_loss_mask", "agent_ref"):
                if key in row:
                    info[key] = _one(row, key)
            if trained != total:
                info["totalReward"] = total
        turn["info"] = info
        turns.append(shapes.turn_body(turn, f"turns[{i}]"))
        prev_end = b
    group = "prompt-" + hashlib.sha1(repr(ids[:segs[0][0]]).encode()).hexdigest()[:16]
    return {"turns": turns, "reward": trained}, group, trained, float(adv[segs[0][0]])  # type: ignore[index]


def _mean_std(xs: Sequence[float]) -> Tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, (math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0)


def turnlens_prediction(name: str, rewards: Sequence[float]) -> List[float]:
    """One group's advantages under a TurnLens estimator (lib/credit/README.md), in float64."""
    n = len(rewards)
    m, s = _mean_std(rewards)
    if name == "grpo":
        return [r / (1 + _EPS) for r in rewards] if n == 1 else [(r - m) / (s + _EPS) for r in rewards]
    if name == "rloo":
        return list(rewards) if n == 1 else [n / (n - 1) * (r - m) for r in rewards]
    return [r - m for r in rewards]  # drgrpo


def nemo_prediction(rewards: Sequence[float], leave_one_out: bool, normalize: bool) -> List[float]:
    """One group's advantages as NeMo-RL computes them (calculate_baseline_and_std_per_prompt, then
    GRPOAdvantageEstimator), in float64."""
    n = len(rewards)
    if n <= 1:
        return [0.0] * n  # NeMo-RL sets the baseline to the reward: nothing to compare with
    s, q = sum(rewards), sum(r * r for r in rewards)
    out = []
    for r in rewards:
        num = n - 1 if leave_one_out else n
        b = (s - r) / num if leave_one_out else s / num
        sq = (q - r * r) / num if leave_one_out else q / num
        var = (sq - b * b) * (num / (num - 1)) if num > 1 else (0.0 if sq - b * b <= 0 else math.inf)
        std = math.sqrt(var) if var > 0 else 0.0
        a = r - b
        out.append(a / (std + _EPS) if normalize and std > 0 else a)
    return out


def _close(pred: Sequence[float], stored: Sequence[float], tol: float = _TOL) -> bool:
    return all(abs(p - a) <= tol * (1 + abs(a)) for p, a in zip(pred, stored))


def label(groups: Dict[str, List[Tuple[float, float]]]) -> Tuple[str, Dict[str, Any]]:
    """The step's estimator and params from its groups' (reward, stored advantage) pairs."""
    cols = [([r for r, _ in g], [a for _, a in g]) for g in groups.values()]
    for name in ("grpo", "rloo", "drgrpo"):
        if all(_close(turnlens_prediction(name, rs), adv) for rs, adv in cols):
            return name, ({"epsilon": _EPS} if name == "grpo" else {})
    for loo in (True, False):
        for norm in (True, False):
            if all(_close(nemo_prediction(rs, loo, norm), adv, _NEMO_TOL) for rs, adv in cols):
                return ESTIMATOR, {"trainer": {"use_leave_one_out_baseline": loo, "normalize_rewards": norm}, "note": (
                    "NeMo-RL's GRPO with these settings reproduces the stored advantages; TurnLens has no estimator that "
                    "does (a leave-one-out std, or a group of one getting 0)")}
    return ESTIMATOR, {"note": (
        "no setting of NeMo-RL's GRPO advantage (leave-one-out baseline on or off, normalize_rewards on or off) reproduces "
        "the stored advantages: advantage clipping, message-level penalties or another estimator was used")}


def read(path: str, env_id: str = "external") -> List[Source]:
    """NeMo-RL GRPO training data (train_data_step<N>.jsonl): conversations, token ids, logprobs, advantages"""
    p = Path(path)
    runs = _files(p) if p.exists() else {}
    files = [f for fs in runs.values() for _, f in fs]
    if not files or not all(is_text(str(f)) for f in files):
        raise unsupported(path, "nemo-rl", _READS)
    out = []
    for d, fs in runs.items():
        key = os.path.abspath(p if p.is_file() else d)
        src = Source(name=d.name, config={"source": "nemo-rl train_data_step*.jsonl"}, key=key, env_id=env_id,
                     estimator=ESTIMATOR)
        for step, f in fs:
            groups: Dict[str, List[Dict[str, Any]]] = {}
            pairs: Dict[str, List[Tuple[float, float]]] = {}
            for where, row in json_objects(f, src):
                if "token_ids" not in row and "advantages" not in row and "content" in row:
                    # NeMo-RL's distillation writes the same file name with content and input_lengths only
                    src.reject(f.name, "holds content and input_lengths only (NeMo-RL's distillation writes that): no tokens, "
                                       "rewards or advantages to import")
                    break
                try:
                    traj, group, reward, adv = sample(row)
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
                    continue
                groups.setdefault(group, []).append(traj)
                pairs.setdefault(group, []).append((reward, adv))
            if groups:
                estimator, params = label(pairs)
                src.add_step(shapes.step_body(step, groups, env_id, estimator, params), sum(map(len, groups.values())), f.name)
        out.append(src)
    return out
