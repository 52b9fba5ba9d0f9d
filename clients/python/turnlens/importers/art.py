"""OpenPipe ART's model folders: `art.Model.log(groups, split=...)` writes, under the backend's
`art_path` (default `.art`), `{project}/models/{model}/trajectories/{split}/{step:04d}.parquet`
(zstd; src/art/utils/trajectory_logging.py `write_trajectory_groups_parquet`: one row per
trajectory with group_index, reward, metrics / metadata / group_metrics / group_metadata as JSON
text, logs, and messages: role, content, tool_calls as JSON text, tool_call_id, trainable) and
appends one line per `log` call to `history.jsonl` (`Model._log_metrics`: the metrics under
`{split}/...`, `training_step`, `time/wall_clock_sec`, `step`, `recorded_at`).

One run per model: history.jsonl's numbers are its curves at `step` (`recorded_at`, a local time
without zone, read in the importing machine's zone, gives the run's times), the `train` split's
files its steps. Each other split (`val`, ...) is a run of its own, "<model> (<split>)":
evaluations, not training. A row is a trajectory, its messages turns as the `chat` importer makes
them (a turn per assistant message, tool calls kept as JSON; the turn's info.trainable says whether
ART trains on it: a sampled Choice is, a plain assistant message is not), the trajectory's reward
on its last turn, its metrics, metadata and logs in the last turn's info. A group is the file's
group_index (`g<index>`).

Advantages: the files hold rewards, not advantages. ART's LocalBackend trains each group on
`r - mean` divided by `population std + 1e-6` (`scale_rewards=True`, the default;
src/art/preprocessing/tokenize.py `tokenize_trajectory_groups`), and skips trajectories whose
advantage is 0. Train steps carry that advantage on every turn (info.artTrained false where ART
skips the trajectory). TurnLens's `grpo` uses the unbiased std, so these steps are labelled
`art:grpo`; with `$TURNLENS_ART_SCALE_REWARDS=false` (`scale_rewards=False` or
`normalize_advantages=False`) the advantage is `r - mean`, TurnLens's `drgrpo`, which labels the
step when every group has two or more trajectories (ART gives a group of one 0, drgrpo its reward).
Requires pyarrow.
"""

import datetime
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import shapes
from .base import Source, is_text, json_objects, unsupported
from .chat import turns_of

_READS = ("an ART model folder (<art_path>/<project>/models/<model>/ with history.jsonl and "
          "trajectories/<split>/<step>.parquet), a folder above one, or one such parquet file")
_STEP_FILE = re.compile(r"^(\d+)\.parquet$")
_HISTORY_SKIP = ("step", "recorded_at", "training_step")
ART_EPSILON = 1e-6  # tokenize_trajectory_groups: advantage /= reward_std + 1e-6


def scale_rewards() -> bool:
    v = os.environ.get("TURNLENS_ART_SCALE_REWARDS", "true").strip().lower()
    if v not in ("true", "false", "1", "0"):
        raise ValueError(f"TURNLENS_ART_SCALE_REWARDS: expected true or false, got {v!r}")
    return v in ("true", "1")


def advantages(rewards: List[float], scale: bool) -> List[float]:
    """ART LocalBackend's advantages of one group, in its order of operations (float64)."""
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    out = []
    for r in rewards:
        a = r - mean
        if scale:
            a /= std + ART_EPSILON
        out.append(a)
    return out


def _is_model_dir(d: Path) -> bool:
    return (d / "history.jsonl").is_file() or (d / "trajectories").is_dir()


def _model_dirs(p: Path) -> List[Path]:
    if _is_model_dir(p):
        return [p]
    found = {f.parent for f in p.rglob("history.jsonl")} | {t.parent for t in p.rglob("trajectories") if t.is_dir()}
    return sorted(d for d in found if _is_model_dir(d))


def _json_field(row: Dict[str, Any], k: str, where: str) -> Any:
    v = row.get(k)
    if v is None or not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        raise shapes.ShapeError(f"{where}.{k}: not valid JSON text") from None


def trajectory(row: Dict[str, Any], where: str) -> Dict[str, Any]:
    """One parquet row as a trajectory; ShapeError naming the field otherwise."""
    if row.get("reward") is None:
        raise shapes.ShapeError("reward: required")
    reward = shapes.to_number(row["reward"], "reward")
    msgs = row.get("messages")
    if not isinstance(msgs, list):
        raise shapes.ShapeError("messages: expected a list of {role, content, tool_calls, trainable}")
    messages, trainable = [], []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise shapes.ShapeError(f"messages[{i}]: expected a message")
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = _json_field(m, "tool_calls", f"messages[{i}]")
        if m.get("role") == "assistant":
            trainable.append(bool(m.get("trainable")))
        messages.append(m)
    turns, _ = turns_of(messages, reward, where)
    for t, tr in zip(turns, trainable):
        t.setdefault("info", {})["trainable"] = tr
    extra = {k: _json_field(row, k, where) for k in ("metrics", "metadata", "tools") if row.get(k)}
    if row.get("logs"):
        extra["logs"] = list(row["logs"])
    if extra:
        turns[-1]["info"]["art"] = extra
    return {"turns": turns, "reward": reward}


def _wall(row: Dict[str, Any]) -> Optional[float]:
    t = row.get("recorded_at")
    if not isinstance(t, str):
        return None
    try:
        return datetime.datetime.fromisoformat(t).timestamp()
    except ValueError:
        return None


def _history(src: Source, f: Path) -> None:
    points = []
    for where, row in json_objects(f, src):
        try:
            step = shapes.to_step(row.get("step", row.get("training_step")), "step")
        except shapes.ShapeError as e:
            src.reject(where, str(e))
            continue
        values: Dict[str, float] = {}
        for k, v in row.items():
            if k in _HISTORY_SKIP:
                continue
            try:
                values[shapes.sanitize_key(str(k))] = shapes.to_number(v, k)
            except shapes.ShapeError as e:
                src.reject(where, str(e))
        if values:
            points.append(dict(shapes.metric_point(values, step, _wall(row)), where=where))
    src.add_metrics(points, f.name)


def _split_steps(src: Source, files: List[Tuple[int, Path]], split: str, env_id: str, pq: Any) -> None:
    train = split == "train"
    scale = scale_rewards() if train else False
    for step, f in files:
        try:
            rows = pq.read_table(f).to_pylist()
        except Exception as e:  # a truncated or foreign file: name it, keep the others
            src.reject(f.name, f"not a readable parquet file ({type(e).__name__}: {e})")
            continue
        groups: Dict[str, List[Dict[str, Any]]] = {}
        for i, row in enumerate(rows):
            where = f"{split}/{f.name}:row {i}"
            try:
                gi = row.get("group_index")
                if not isinstance(gi, int):
                    raise shapes.ShapeError("group_index: required")
                traj = trajectory(row, where)
                if f"g{gi}" not in groups:  # the group's own fields, repeated on each of its rows: kept once
                    for k, name in (("group_metrics", "groupMetrics"), ("group_metadata", "groupMetadata"), ("group_logs", "groupLogs")):
                        if row.get(k):
                            traj["turns"][-1]["info"].setdefault("art", {})[name] = _json_field(row, k, where)
            except shapes.ShapeError as e:
                src.reject(where, str(e))
                continue
            groups.setdefault(f"g{gi}", []).append(traj)
        if not groups:
            continue
        estimator = params = None
        if train:
            for trajs in groups.values():
                for t, a in zip(trajs, advantages([t["reward"] for t in trajs], scale)):
                    for turn in t["turns"]:
                        turn["advantage"] = a
                    t["turns"][-1]["info"]["artTrained"] = a != 0
            if not scale and all(len(t) > 1 for t in groups.values()):
                estimator, params = "drgrpo", {}
            else:
                estimator = "art:grpo"
                params = {"trainer": {"scale_rewards": scale, "std": "population", "epsilon": ART_EPSILON if scale else 0.0,
                                      "drop_zero_advantage_trajectories": True},
                          "note": ("ART's files hold rewards, not advantages: these are ART LocalBackend's rule applied to them "
                                   "(r - mean" + (", over the population std + 1e-6" if scale else "; a group of one gets 0") +
                                   "); TurnLens's grpo divides by the unbiased std. Set TURNLENS_ART_SCALE_REWARDS=false if the "
                                   "run trained with scale_rewards=False")}
        try:
            body = shapes.step_body(step, groups, env_id, estimator, params)
        except shapes.ShapeError as e:
            src.reject(f.name, str(e))
            continue
        src.add_step(body, sum(len(v) for v in groups.values()), f"{split}/{f.name}")


def read(path: str, env_id: str = "external") -> List[Source]:
    """OpenPipe ART model folders (.art/<project>/models/<model>: history.jsonl and trajectories/<split>/<step>.parquet)"""
    p = Path(path)
    one: Optional[Tuple[Path, str, Path]] = None
    if p.is_file():
        if not _STEP_FILE.match(p.name) or p.parent.parent.name != "trajectories":
            raise unsupported(path, "art", _READS)
        one = (p.parents[2], p.parent.name, p)
        dirs = [p.parents[2]]
    else:
        dirs = _model_dirs(p)
    if not dirs:
        raise unsupported(path, "art", _READS)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("the art importer reads parquet files and needs pyarrow (pip install pyarrow)") from None
    sources = []
    for d in dirs:
        project = d.parent.parent.name if d.parent.name == "models" else ""
        config = {"source": "OpenPipe ART", "project": project, "model": d.name}
        splits: Dict[str, List[Tuple[int, Path]]] = {}
        old: List[str] = []
        if one:
            splits[one[1]] = [(int(_STEP_FILE.match(one[2].name).group(1)), one[2])]
        elif (d / "trajectories").is_dir():
            for s in sorted(x for x in (d / "trajectories").iterdir() if x.is_dir()):
                files = sorted((int(m.group(1)), f) for f in s.iterdir() if (m := _STEP_FILE.match(f.name)))
                if files:
                    splits[s.name] = files
                old += [f"{s.name}/{f.name}" for f in sorted(s.glob("*.jsonl")) if not f.with_suffix(".parquet").exists()]
        main = Source(name=d.name, config=config, key=os.path.abspath(d), env_id=env_id)
        for where in old:  # written by ART before its parquet format; ART's own command converts them
            main.reject(where, f"an older ART's JSONL trajectory file: convert it with `art migrate {d}` (ART's command), then import again")
        if not one and (d / "history.jsonl").is_file():
            if not is_text(str(d / "history.jsonl")):
                raise unsupported(str(d / "history.jsonl"), "art", _READS)
            _history(main, d / "history.jsonl")
        if "train" in splits:
            _split_steps(main, splits.pop("train"), "train", env_id, pq)
        if main.records or main.rejected:
            sources.append(main)
        for split, files in splits.items():
            src = Source(name=f"{d.name} ({split})", config=dict(config, split=split),
                         key=os.path.abspath(d / "trajectories" / split), env_id=env_id)
            _split_steps(src, files, split, env_id, pq)
            sources.append(src)
    return sources
