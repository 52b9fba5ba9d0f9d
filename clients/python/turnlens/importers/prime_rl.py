"""prime-rl's per-token exports (`trainer.enable_token_export = true`).

prime-rl's trainer (src/prime_rl/trainer/rl/token_export.py at 559b447, schema_version 1) writes
`<output_dir>/token_exports/step_<step>/rank_<rank>.jsonl`, one line per trained sequence, and a
`STABLE` file in the step's folder once every rank has written it. A line holds the sequence's
aligned per-token arrays: token_ids, position_ids, loss_mask (the tokens trained on: the model's
own), advantages, inference_logprobs (sampling time), trainer_logprobs, entropy, and the loss's
diagnostics (mismatch_kl, log_importance_ratio, importance_ratio, prob_delta, is_masked,
is_masked_high, is_masked_low, rl_weights, ce_weights, ref_kl_weights; null where not computed or
not finite), with step, rank, micro_step, micro_sequence_idx, export_sequence_idx and env_name.
Earlier exporters wrote more (read in prime-rl's history): its multi-tenant trainer (941019f until
289562d) adds export_step and run_id and writes each run's sequences to
<output_dir>/<run_id>/token_exports/step_<export_step>, so the folder is export_step (the run's
step), not step (the trainer's); the first exporter (e971d90 until 0be5ac4) has a per-token
`rewards` column, kept in info.tokens like any other column. The trainer decodes no text.

Each sequence becomes a trajectory; each run of loss-masked tokens is one turn (a multi-turn
rollout has one per model reply): its tokenIds, tokenLogprobs (inference_logprobs),
tokenAdvantages and tokenEntropies are those tokens' values; the tokens before it (prompt, tool
or environment output) are the turn's observation, kept as ids in info.observationTokenIds; the
other per-token columns go to info.tokens. Observation and action text are empty (no text was
exported) and the reward is 0 with info.rewardExported = false: the export has none. Sequences
with the same first observation (the same prompt: a GRPO group) form a group. The advantages are
prime-rl's as trained (estimator "prime-rl:token-export"; TurnLens cannot recompute them: the
export has neither rewards nor the advantage settings). Steps without STABLE (still being written,
or the run stopped mid-step) are reported, not imported: a step is stored once, whole.
PATH: the run's output dir, its token_exports folder, one step_<n> folder, or one rank file.
"""

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import shapes
from .base import Source, is_text, json_objects, unsupported

_READS = "prime-rl token exports (<output_dir>/token_exports/step_<n>/rank_<r>.jsonl, written with trainer.enable_token_export)"
_STEP = re.compile(r"^step_(\d+)$")
_TURN_ARRAYS = {"inference_logprobs": "tokenLogprobs", "advantages": "tokenAdvantages", "entropy": "tokenEntropies"}
_META = ("schema_version", "step", "export_step", "run_id", "rank", "micro_step", "micro_sequence_idx", "export_sequence_idx",
         "env_name")
ESTIMATOR = "prime-rl:token-export"
PARAMS = {"trainer": {"source": "token_exports", "schemaVersion": 1},
          "note": "prime-rl's token export holds the advantages as trained but neither the rewards nor the advantage settings, so TurnLens cannot recompute them."}


def _steps(p: Path) -> List[Tuple[int, Path, List[Path]]]:
    """(step, its folder, its rank files) in step order."""
    if p.is_file():
        m = _STEP.match(p.parent.name)
        return [(int(m.group(1)) if m else -1, p.parent, [p])]
    if _STEP.match(p.name):
        return [(int(_STEP.match(p.name).group(1)), p, sorted(p.glob("rank_*.jsonl")))]
    root = p / "token_exports" if (p / "token_exports").is_dir() else p
    out = []
    for d in root.iterdir():
        m = _STEP.match(d.name)
        if m and d.is_dir():
            out.append((int(m.group(1)), d, sorted(d.glob("rank_*.jsonl"), key=lambda f: (len(f.name), f.name))))
    return sorted(out)




def trajectory(row: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    """(trajectory, group key) of one exported sequence; ShapeError naming the field otherwise."""
    ids = row.get("token_ids")
    mask = row.get("loss_mask")
    if not isinstance(ids, list) or not ids:
        raise shapes.ShapeError("token_ids: expected a non-empty list")
    if not isinstance(mask, list) or len(mask) != len(ids):
        raise shapes.ShapeError(f"loss_mask: expected one entry per token ({len(ids)})")
    columns = {k: v for k, v in row.items() if isinstance(v, list) and k not in ("token_ids", "loss_mask")}
    for k, v in columns.items():
        if len(v) != len(ids):
            raise shapes.ShapeError(f"{k}: {len(v)} entries, token_ids has {len(ids)} (one per token)")
    segs = shapes.mask_runs(mask)
    if not segs:
        raise shapes.ShapeError("loss_mask: no token was trained on")
    turns = []
    prev = 0
    for n, (a, b) in enumerate(segs):
        turn: Dict[str, Any] = {"observation": "", "action": "", "reward": 0.0, "tokenIds": ids[a:b]}
        info: Dict[str, Any] = {"observationTokenIds": ids[prev:a], "rewardExported": False}
        extra: Dict[str, Any] = {}
        for col, vals in columns.items():
            seg = vals[a:b]
            if all(v is None for v in seg):
                continue
            name = _TURN_ARRAYS.get(col)
            if name and all(v is not None for v in seg):
                turn[name] = seg
            else:  # diagnostics, or a column with null (non-finite) entries: kept as exported
                extra[col] = seg
        if extra:
            info["tokens"] = extra
        adv = columns.get("advantages", [None] * len(ids))[a:b]
        if adv and all(v is not None for v in adv) and max(adv) == min(adv):
            turn["advantage"] = adv[0]  # one advantage for the whole reply, as GRPO-style trainers give
        if n == len(segs) - 1:
            turn["done"] = True
            info.update({k: row[k] for k in _META if k in row})
        turn["info"] = info
        turns.append(shapes.turn_body(turn, f"turns[{n}]"))
        prev = b
    group = "prompt-" + hashlib.sha1(repr(ids[:segs[0][0]]).encode()).hexdigest()[:16]
    return {"turns": turns}, group


def read(path: str, env_id: str = "external") -> List[Source]:
    """prime-rl token exports (token_exports/step_<n>/rank_<r>.jsonl): per-token ids, logprobs, advantages, entropies"""
    p = Path(path)
    steps = _steps(p) if p.exists() else []
    files = [f for _, _, fs in steps for f in fs]
    if not files or not all(is_text(str(f)) for f in files):
        raise unsupported(path, "prime-rl", _READS)
    run_dir = p if p.is_dir() and not _STEP.match(p.name) else None
    name = (run_dir.parent.name if run_dir and run_dir.name == "token_exports" else (run_dir.name if run_dir else p.parent.name))
    src = Source(name=name, config={"source": "prime-rl token_exports"}, key=os.path.abspath(p), env_id=env_id,
                 estimator=ESTIMATOR)
    for step, d, fs in steps:
        if not (d / "STABLE").exists():
            src.reject(d.name, "no STABLE marker: the step was still being written (or the run stopped mid-step); import again once it is complete")
            continue
        groups: Dict[str, List[Dict[str, Any]]] = {}
        env: Optional[str] = None
        for f in fs:
            for where, row in json_objects(f, src):
                where = f"{d.name}/{where}"
                try:
                    if row.get("schema_version") not in (1, None):
                        raise shapes.ShapeError(f"schema_version: {row.get('schema_version')!r} is not one this importer knows (1)")
                    # the folder is the export step: with several runs in one trainer (each in <run_id>/token_exports)
                    # it is the run's own step (export_step), which the trainer's step (step) need not equal
                    field = "export_step" if row.get("export_step") is not None else "step"
                    if row.get(field) not in (None, step) and step >= 0:
                        raise shapes.ShapeError(f"{field}: {row.get(field)!r} in the folder of step {step}")
                    traj, group = trajectory(row)
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
                    continue
                env = env or row.get("env_name")
                groups.setdefault(group, []).append(traj)
        if groups:
            body = shapes.step_body(step if step >= 0 else 0, groups, env or env_id, ESTIMATOR, PARAMS)
            src.add_step(body, sum(len(g) for g in groups.values()), f"{d.name}")
    return [src]
