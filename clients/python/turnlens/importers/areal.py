"""AReaL's rollout dumps (`rollout.dump_to_file = true`).

AReaL's workflow executor (areal/infra/workflow_executor.py `_dump_trajectory`, AReaL 1.0.4) appends each
finished rollout task to `<fileroot>/logs/<user>/<experiment>/<trial>/rollout/<tail_version>/<task_id>.jsonl`
(evaluation rollouts to `eval-rollout/`), one line per sequence of the task's batch: task_id, sample_idx,
seqlen, prompt_len, head_version and tail_version (the oldest and newest policy versions that generated
the task's tokens: asynchronous rollouts span weight updates), reward, and the decoded prompt and
completion. It writes no advantages and no per-turn split: AReaL trains each dumped sequence as one
sample (an agent workflow's interactions are each their own line).

A version folder is a step (the policy version that finished the task), a task file a group, a line a
one-turn trajectory (observation = prompt, action = completion, reward). The first turn's info keeps
head_version, tail_version, task_id, sample_idx, seqlen and prompt_len. AReaL takes both versions over
every token of the task's batch, prompt tokens and padding included, and its workflows give prompt tokens
version -1: head_version is then -1 (unknown), and only tail_version (the folder) says which policy wrote
the task. Where head_version is known (>= 0: a workflow that versions every token) the info adds
version_span (tail - head: how many weight updates the generation spanned) and the step gets the metrics
areal/version_span_mean, areal/version_span_max and areal/head_version_min. The dump does not say at which
step a sequence was trained: staleness against the trainer is the hook's (turnlens.integrations.areal). No estimator label: AReaL computes the advantages
after dumping (see turnlens.integrations.areal to log them).
PATH: the trial's log folder, its rollout (or eval-rollout) folder, one version folder, or one task file.
"""

import os
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

from .. import shapes
from .base import Source, is_text, json_objects, unsupported

_READS = ("AReaL rollout dumps (<fileroot>/logs/<user>/<experiment>/<trial>/rollout/<version>/<task_id>.jsonl, "
          "written with rollout.dump_to_file=true)")
_NUM = re.compile(r"^\d+$")
_TASK = re.compile(r"^(\d+)\.jsonl$")
_INFO = ("head_version", "tail_version", "task_id", "sample_idx", "seqlen", "prompt_len")


def _versions(p: Path) -> List[Tuple[int, List[Path]]]:
    """(version, its task files in task order) of PATH."""
    if p.is_file():
        return [(int(p.parent.name) if _NUM.match(p.parent.name) else -1, [p])]
    if _NUM.match(p.name):
        dirs = [p]
    else:
        root = p / "rollout" if (p / "rollout").is_dir() else p
        dirs = [d for d in root.iterdir() if d.is_dir() and _NUM.match(d.name)]
    out = []
    for d in dirs:
        files = [f for f in d.iterdir() if _TASK.match(f.name)]
        out.append((int(d.name), sorted(files, key=lambda f: int(_TASK.match(f.name).group(1)))))
    return sorted(out)


def _int(row: Dict[str, Any], key: str) -> int:
    v = row.get(key)
    if type(v) is not int:
        raise shapes.ShapeError(f"{key}: expected an integer, got {v!r}")
    return v


def trajectory(row: Dict[str, Any], version: int) -> Dict[str, Any]:
    """One dumped line -> a one-turn trajectory; ShapeError naming the field otherwise."""
    head, tail = _int(row, "head_version"), _int(row, "tail_version")
    if version >= 0 and tail != version:
        raise shapes.ShapeError(f"tail_version: {tail} in the folder of version {version}")
    if head > tail:
        raise shapes.ShapeError(f"head_version: {head} is after tail_version {tail}")
    for k in ("prompt", "completion"):
        if not isinstance(row.get(k), str):
            raise shapes.ShapeError(f"{k}: expected a string, got {type(row.get(k)).__name__}")
    info = {k: row[k] for k in _INFO if k in row}
    if head >= 0:  # -1: AReaL's version of prompt tokens, the head is unknown
        info["version_span"] = tail - head
    info.update({k: v for k, v in row.items() if k not in _INFO and k not in ("prompt", "completion", "reward")})
    turn = {"observation": row["prompt"], "action": row["completion"], "reward": row.get("reward"), "done": True, "info": info}
    return {"turns": [shapes.turn_body(turn, "turns[0]")]}


def read(path: str, env_id: str = "external") -> List[Source]:
    """AReaL rollout dumps (rollout/<version>/<task_id>.jsonl): prompt, completion, reward, head/tail policy versions"""
    p = Path(path)
    versions = _versions(p) if p.exists() else []
    files = [f for _, fs in versions for f in fs]
    if not files or not all(is_text(str(f)) for f in files):
        raise unsupported(path, "areal", _READS)
    # the run is the trial: name it after the trial's folder (above rollout/ and the version folder)
    trial = p
    while trial.name in ("rollout", "eval-rollout") or _NUM.match(trial.name) or trial.is_file():
        trial = trial.parent
    src = Source(name=trial.name, config={"source": "AReaL dump_to_file"}, key=os.path.abspath(p), env_id=env_id)
    points = []
    for version, fs in versions:
        groups: Dict[str, List[Dict[str, Any]]] = {}
        spans: List[int] = []
        heads: List[int] = []
        for f in fs:
            for where, row in json_objects(f, src):
                where = f"{version}/{where}"
                try:
                    traj = trajectory(row, version)
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
                    continue
                info = traj["turns"][0]["info"]
                if "version_span" in info:
                    spans.append(info["version_span"])
                    heads.append(info["head_version"])
                groups.setdefault(f"task-{_TASK.match(f.name).group(1)}", []).append(traj)
        if groups:
            step = version if version >= 0 else 0
            src.add_step(shapes.step_body(step, groups, env_id), sum(len(g) for g in groups.values()), str(version))
        if spans:
            points.append({"step": step, "values": {"areal/version_span_mean": sum(spans) / len(spans),
                                                    "areal/version_span_max": max(spans), "areal/head_version_min": min(heads)}})
    if points:
        src.add_metrics(points, "versions", rows=False)
    return [src]
