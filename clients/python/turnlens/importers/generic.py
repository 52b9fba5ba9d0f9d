"""The generic JSONL format: one JSON object per line, `type` saying what it is.

    {"type": "run", "name": "my-run", "config": {"lr": 1e-6}, "envId": "sokoban", "estimator": "gigpo"}
    {"type": "metrics", "step": 0, "values": {"train/reward": 0.1}, "wallTime": 1763870000.0}
    {"type": "rollouts", "step": 0, "groups": {"task-0": [[{"observation": "...", "action": "left", "reward": 1}]]}}
    {"type": "finish", "status": "succeeded"}

`run` (optional, first) names the run; `metrics` lines are run.log() calls; `rollouts` lines are
run.log_rollouts() calls (same group shapes, optional "estimator"); `finish` (optional) sets the
final status. Blank lines are skipped; any other line is rejected with its line number and reason.
"""

import os
from pathlib import Path
from typing import List

from .. import shapes
from ..contract import CONTRACT
from .base import Source, is_text, json_objects, unsupported


def read(path: str, env_id: str = "external") -> List[Source]:
    """a generic JSONL file (type: run | metrics | rollouts | finish per line; see the README)"""
    p = Path(path)
    files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    for f in files:
        if not is_text(str(f)):
            raise unsupported(str(f), "jsonl", "the generic JSON lines format (type: run | metrics | rollouts | finish per line)")
    out = []
    for f in files:
        src = Source(name=f.stem, config={}, key=os.path.abspath(f), env_id=env_id)
        points = []
        for where, row in json_objects(f, src):
            try:
                kind = row.get("type")
                if kind == "run":
                    src.name = str(row.get("name") or src.name)
                    src.config = dict(row.get("config") or {})
                    src.env_id = row.get("envId") or src.env_id
                    src.estimator = row.get("estimator")
                elif kind == "metrics":
                    points.append(shapes.metric_point(row.get("values"), row.get("step"), row.get("wallTime")))
                elif kind == "rollouts":
                    body = shapes.step_body(row.get("step"), row.get("groups"), src.env_id or env_id,
                                            row.get("estimator", src.estimator), row.get("params"), row.get("diagnostics"))
                    src.add_step(body, 1, where)
                elif kind == "finish":
                    status = row.get("status", "succeeded")
                    if status not in CONTRACT["finishStatuses"]:
                        raise shapes.ShapeError(f"status: expected {', '.join(CONTRACT['finishStatuses'])}, got {status!r}")
                    src.status = status
                else:
                    raise shapes.ShapeError(f"type: expected run, metrics, rollouts or finish, got {kind!r}")
            except shapes.ShapeError as e:
                src.reject(where, str(e))
        src.add_metrics(points, f"{f.name} metrics")
        out.append(src)
    return out
