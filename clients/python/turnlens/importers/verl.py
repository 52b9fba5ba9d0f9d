"""verl's rollout and validation dumps (trainer.rollout_data_dir / trainer.validation_data_dir).

verl writes one `<step>.jsonl` per training step; each line is one sample:
`{"input": prompt, "output": response, "gts": ground truth, "score": reward, "step": step, ...}`
plus the reward function's extra fields. Samples with the same `input` are one GRPO group; each
sample is a one-turn trajectory (observation = input, action = output, reward = score,
success = score > 0, the other fields in the turn's info). Per step, the mean score and the mean
of each numeric extra field are logged as metrics (verl/score_mean, verl/<field>_mean).
"""

import hashlib
import os
from pathlib import Path
from typing import Any, Dict, List

from .. import shapes
from .base import Source, json_objects

_CORE = {"input", "output", "gts", "score", "step"}


def read(path: str, env_id: str = "external") -> List[Source]:
    """verl rollout dumps: a folder of <step>.jsonl (input, output, gts, score, step, extra fields)"""
    p = Path(path)
    files = [p] if p.is_file() else sorted(p.glob("*.jsonl"), key=lambda f: (int(f.stem) if f.stem.isdigit() else 1 << 62, f.name))
    if not files:
        raise FileNotFoundError(f"{path}: no <step>.jsonl files")
    src = Source(name=p.name if p.is_dir() else p.stem, config={"source": "verl rollout dump"},
                 key=os.path.abspath(p), env_id=env_id)
    points = []
    for f in files:
        by_step: Dict[int, Dict[str, List[Dict[str, Any]]]] = {}
        file_step = int(f.stem) if f.stem.isdigit() else None
        for where, row in json_objects(f, src):
            try:
                for k in ("input", "output", "score"):
                    if k not in row:
                        raise shapes.ShapeError(f"{k}: required")
                step = shapes.to_step(row.get("step", file_step), "step")
                score = shapes.to_number(row["score"], "score")
                info = {k: v for k, v in row.items() if k not in _CORE}
                if "gts" in row:
                    info["gts"] = row["gts"]
                turn = {"observation": str(row["input"]), "action": str(row["output"]), "reward": score, "done": True, "info": info}
                shapes.turn_body(turn, where)  # validate the extra fields now, with the line number
            except shapes.ShapeError as e:
                src.reject(where, str(e))
                continue
            uid = hashlib.sha1(str(row["input"]).encode()).hexdigest()[:16]
            by_step.setdefault(step, {}).setdefault(uid, []).append({"turns": [turn], "reward": score, "success": score > 0})
        for step, groups in sorted(by_step.items()):
            body = shapes.step_body(step, groups, env_id)
            src.add_step(body, sum(len(t) for t in groups.values()), f"{f.name} step {step}")
            values: Dict[str, float] = {}
            rows = [t["turns"][0] for ts in groups.values() for t in ts]
            values["verl/score_mean"] = sum(r["reward"] for r in rows) / len(rows)
            extra: Dict[str, List[float]] = {}
            for r in rows:
                for k, v in r["info"].items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        extra.setdefault(k, []).append(float(v))
            for k, vs in extra.items():
                values[shapes.sanitize_key(f"verl/{k}_mean")] = sum(vs) / len(vs)
            points.append(shapes.metric_point(values, step))
    src.add_metrics(points, "per-step means", rows=False)
    return [src]
