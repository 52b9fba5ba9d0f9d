"""An MLflow tracking store, for users moving over: the SQLite store (MLflow 3's default,
`sqlite:///mlflow.db`) or the file store (`mlruns/`).

SQLite (MLflow's SqlAlchemyStore schema): tables experiments (experiment_id, name), runs (run_uuid,
name, status FINISHED/FAILED/KILLED/RUNNING, start_time/end_time ms, experiment_id,
lifecycle_stage), params / tags (key, value, run_uuid) and metrics (key, value, timestamp ms,
step, is_nan, run_uuid: every logged value, so one step can hold several). PATH may be the .db
file or a folder holding it; deleted runs (lifecycle_stage "deleted") are skipped.

File store layout (MLflow's FileStore): mlruns/<experiment id>/meta.yaml (name), and per run
mlruns/<experiment id>/<run id>/meta.yaml (run_name, status), params/<key> (the value as text),
tags/<key>, metrics/<key> (lines `timestamp_ms value step`; keys with / are sub-folders).
PATH may be the mlruns folder, one experiment's folder, or one run's folder. Each MLflow run
becomes a TurnLens run named after it, with its params as config (numbers parsed) and its tags
and ids under config.mlflow; every logged metric value is one row. Two values of one key
at one step (MLflow keeps both) become one point: the later logged is kept, the earlier counted as
replaced. Runs keep MLflow's start and end times.

Traces (SQLite store: trace_info, trace_tags, spans; what verl's rollout tracing writes with
actor_rollout_ref.rollout.trace.backend=mlflow): each trace is a trajectory at its `step` tag, grouped
by its `sample_index` tag (ordered by `rollout_n`), a turn per `generate` span (see trace_trajectory);
every span (name, type, times, inputs, outputs) is kept in the last turn's info (`spans`), as the
Trackio importer keeps a trace's. Traces tagged validate=True are reported, not imported.
"""

import json
import math
import os
import sqlite3
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import shapes
from . import chat
from .base import Source, text_lines, unsupported

# MLflow RunStatus: RUNNING=1, SCHEDULED=2, FINISHED=3, FAILED=4, KILLED=5
_STATUS = {"3": "succeeded", "FINISHED": "succeeded", "4": "failed", "FAILED": "failed", "5": "canceled", "KILLED": "canceled"}


def read_meta(path: Path) -> Dict[str, str]:
    """meta.yaml is flat `key: value` lines (MLflow writes it with yaml.safe_dump)."""
    out: Dict[str, str] = {}
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            if ":" in line and not line.startswith((" ", "-", "#")):
                k, v = line.split(":", 1)
                v = v.strip()
                if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                    v = v[1:-1]
                out[k.strip()] = v
    return out


def _param(v: str) -> Any:
    for cast in (int, float):
        try:
            x = cast(v)
            if isinstance(x, float) and not math.isfinite(x):
                return v
            return x
        except ValueError:
            pass
    return {"True": True, "False": False, "true": True, "false": False}.get(v, v)


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise shapes.ShapeError(f"{what}: {text[:40]!r} is not a number") from None


def _files(d: Path) -> Dict[str, Path]:
    return {p.relative_to(d).as_posix(): p for p in sorted(d.rglob("*")) if p.is_file()} if d.is_dir() else {}


def _run_dirs(root: Path) -> List[Path]:
    if (root / "metrics").is_dir() or (root / "params").is_dir():
        return [root]
    runs = [p.parent for p in sorted(root.glob("*/meta.yaml")) if (p.parent / "metrics").is_dir() or (p.parent / "params").is_dir()]
    if runs:
        return runs
    return [p.parent for p in sorted(root.glob("*/*/meta.yaml")) if (p.parent / "metrics").is_dir() or (p.parent / "params").is_dir()]


_READS = ("an MLflow store: the SQLite file (mlflow.db, MLflow 3's default) or a folder holding it, or a file store "
          "(an mlruns/ folder, an experiment folder or a run folder)")


def _is_sqlite(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(16) == b"SQLite format 3\0"
    except OSError:
        return False


def _ms(v: Any) -> Any:
    return v / 1000 if isinstance(v, (int, float)) and v > 0 else None


def read_sqlite(db: Path, env_id: str) -> List[Source]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"runs", "metrics", "params", "experiments"} <= tables:
            raise unsupported(str(db), "mlflow", _READS)
        exps = {str(i): n for i, n in con.execute("SELECT experiment_id, name FROM experiments")}
        runs = con.execute("SELECT run_uuid, name, status, start_time, end_time, experiment_id FROM runs "
                           "WHERE lifecycle_stage IS NULL OR lifecycle_stage != 'deleted' ORDER BY start_time, run_uuid").fetchall()
        out = []
        by_id: Dict[str, Source] = {}
        by_name: Dict[Tuple[str, str], Source] = {}  # (experiment id, run name) -> its source: where verl's traces go
        for run_uuid, run_name, status, start, end, exp_id in runs:
            tags = {k: v for k, v in con.execute("SELECT key, value FROM tags WHERE run_uuid = ? ORDER BY key", (run_uuid,))}
            name = tags.get("mlflow.runName") or run_name or run_uuid
            config: Dict[str, Any] = {k: _param(v or "") for k, v in con.execute("SELECT key, value FROM params WHERE run_uuid = ? ORDER BY key", (run_uuid,))}
            config["mlflow"] = {"runId": run_uuid, "experiment": exps.get(str(exp_id), str(exp_id)), "tags": tags}
            src = Source(name=name, config=config, key=f"{os.path.abspath(db)}#{run_uuid}", env_id=env_id,
                         status=_STATUS.get(str(status), "succeeded"), started_at=_ms(start), finished_at=_ms(end))
            points = []
            # rowid: the order MLflow stored them in (two values at one step: the later wins)
            for rowid, key, value, ts, step, is_nan in con.execute(
                    "SELECT rowid, key, value, timestamp, step, is_nan FROM metrics WHERE run_uuid = ? ORDER BY key, rowid", (run_uuid,)):
                where = f"metrics row {rowid}"
                try:
                    p = shapes.metric_point({shapes.sanitize_key(key): float("nan") if is_nan else value}, step, _ms(ts))
                    p["where"] = where
                    points.append(p)
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
            src.add_metrics(points, f"{name} metrics")
            _keep_times(src, start, end)
            out.append(src)
            by_name[(str(exp_id), name)] = by_id[run_uuid] = src
        if {"trace_info", "trace_tags", "spans"} <= tables:
            out.extend(_add_traces(con, db, tables, exps, by_id, by_name, env_id))
        return out
    except sqlite3.DatabaseError as e:
        raise unsupported(str(db), "mlflow", _READS + f" (SQLite said: {e})") from None
    finally:
        con.close()


def _keep_times(src: Source, start: Any, end: Any) -> None:
    """MLflow's own run times win over the metric wall times add_metrics saw."""
    if _ms(start) is not None:
        src.started_at = _ms(start)
    if _ms(end) is not None:
        src.finished_at = _ms(end)


def read(path: str, env_id: str = "external") -> List[Source]:
    """an MLflow store: mlflow.db (SQLite, MLflow 3's default) or an mlruns/ file store: params and metric histories"""
    root = Path(path)
    if root.is_file():
        if _is_sqlite(root):
            return read_sqlite(root, env_id)
        raise unsupported(path, "mlflow", _READS)
    dbs = [p for p in sorted(root.glob("*.db")) if _is_sqlite(p)]
    if dbs and not _run_dirs(root):
        return [s for db in dbs for s in read_sqlite(db, env_id)]
    runs = _run_dirs(root)
    if not runs:
        raise unsupported(path, "mlflow", _READS)
    out = []
    for d in runs:
        meta = read_meta(d / "meta.yaml")
        exp = read_meta(d.parent / "meta.yaml")
        tags = {k: p.read_text(errors="replace") for k, p in _files(d / "tags").items()}
        name = tags.get("mlflow.runName") or meta.get("run_name") or d.name
        config: Dict[str, Any] = {k: _param(p.read_text(errors="replace")) for k, p in _files(d / "params").items()}
        config["mlflow"] = {"runId": meta.get("run_id", d.name), "experiment": exp.get("name", d.parent.name), "tags": tags}
        src = Source(name=name, config=config, key=os.path.abspath(d), env_id=env_id,
                     status=_STATUS.get(meta.get("status", ""), "succeeded"))
        times = [_param(meta.get(k, "")) for k in ("start_time", "end_time")]
        points = []
        for key, f in _files(d / "metrics").items():
            mkey = shapes.sanitize_key(key)
            for n, line in text_lines(f, src, f"metrics/{key}"):
                if not line.strip():
                    continue
                where = f"metrics/{key}:{n}"
                parts = line.split()
                try:
                    if len(parts) not in (2, 3):
                        raise shapes.ShapeError(f"expected 'timestamp value step', got {line[:80]!r}")
                    ts, value = _number(parts[0], "timestamp"), _number(parts[1], "value")
                    step = int(parts[2]) if len(parts) == 3 and parts[2].lstrip("-").isdigit() else (parts[2] if len(parts) == 3 else 0)
                    p = shapes.metric_point({mkey: value}, step, ts / 1000 if ts > 0 else None)
                    p["where"] = where
                    points.append(p)
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
        src.add_metrics(points, f"{name} metrics")
        _keep_times(src, *times)
        out.append(src)
    return out


def _json(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


def _span(row: Tuple[Any, ...]) -> Dict[str, Any]:
    """One row of the spans table as the span dict TurnLens keeps (the Trackio importer's shape): MLflow stores
    each attribute JSON-encoded in `content`, inputs and outputs under mlflow.spanInputs / mlflow.spanOutputs."""
    span_id, parent, name, kind, status, start, end, content = row
    attrs = {k: _json(v) for k, v in ((_json(content) or {}).get("attributes") or {}).items()}
    out: Dict[str, Any] = {"id": span_id, "parent_id": parent, "name": name, "kind": kind, "status": status,
                           "start_time": start / 1e9 if start else None, "end_time": end / 1e9 if end else None}
    for key, field in (("mlflow.spanInputs", "input"), ("mlflow.spanOutputs", "output")):
        if key in attrs:
            out[field] = attrs.pop(key)
    rest = {k: v for k, v in attrs.items() if k not in ("mlflow.traceRequestId", "mlflow.spanType", "mlflow.spanLogLevel")}
    if rest:
        out["attributes"] = rest
    return out


def _field(v: Any, key: str) -> Any:
    return v.get(key) if isinstance(v, dict) else None


def trace_trajectory(spans: List[Dict[str, Any]], where: str) -> Dict[str, Any]:
    """verl's agent-loop trace (utils/rollout_trace.py): an `agent_loop` root, the loop's `run` under it (outputs:
    AgentLoopOutput, reward_score when the loop scored itself), a `generate` span per model call (inputs prompt_ids,
    outputs token_ids; prompt_text / response_text with rollout.trace.token2text) and tool calls. A turn per
    generate span: the prompt text new since the previous call the observation (the chat importer's rendering),
    the response text the action."""
    spans = sorted(spans, key=lambda s: (s.get("start_time") or 0, s.get("id") or ""))
    messages: List[Dict[str, Any]] = []
    counts: List[int] = []
    seen = ""  # the text the previous calls showed and produced
    reward: Optional[float] = None
    for s in spans:
        name = s.get("name") or ""
        if name.endswith(".run") and _field(s.get("output"), "reward_score") is not None:
            reward = shapes.to_number(s["output"]["reward_score"], f"{where} span {name}.outputs.reward_score")
        if not name.endswith("generate"):
            continue
        out = s.get("output")
        prompt = _field(out, "prompt_text") or ""
        new = prompt[len(seen):] if seen and prompt.startswith(seen) else prompt
        response = _field(out, "response_text") or ""
        messages += [{"role": "user", "content": new}, {"role": "assistant", "content": response}]
        seen = prompt + response
        ids = _field(out, "token_ids")
        counts.append(len(ids) if isinstance(ids, list) else 0)
    if not counts:
        raise shapes.ShapeError(f"no generate span among its {len(spans)} span(s) (verl's rollout tracing records one per model call)")
    turns, _ = chat.turns_of(messages, reward if reward is not None else 0.0, where)
    for t, n in zip(turns, counts):
        if n:
            t["tokenCount"] = n
        if t["observation"].startswith("user: "):  # the prompt text is the tokenizer's own rendering: no role prefix of ours
            t["observation"] = t["observation"][len("user: "):]
    traj: Dict[str, Any] = {"turns": turns}
    if reward is not None:
        traj["reward"], traj["success"] = reward, reward > 0
    return traj


def _add_traces(con: sqlite3.Connection, db: Path, tables: Any, exps: Dict[str, str], by_id: Dict[str, Source],
                by_name: Dict[Tuple[str, str], Source], env_id: str) -> List[Source]:
    """The store's traces (trace_info, trace_tags, spans) as trajectories at their `step` tag, grouped by `sample_index`
    (verl's rollout tracing tags each agent loop with step, sample_index, rollout_n, validate and experiment_name).
    A trace joins the run it was logged in (request metadata mlflow.sourceRun), else the run of its experiment named
    as its experiment_name tag (verl's MLflow logger names the run so), else a run of its own; its spans are kept
    in its last turn's info as the Trackio importer keeps a trace's."""
    new: Dict[Tuple[str, str], Source] = {}
    steps_of: Dict[int, Dict[int, Dict[str, List[Tuple[int, Dict[str, Any]]]]]] = {}  # id(src) -> step -> uid -> [(n, traj)]
    sources: Dict[int, Source] = {}
    meta_table = "trace_request_metadata" in tables
    for tid, exp_id, ts in con.execute("SELECT request_id, experiment_id, timestamp_ms FROM trace_info ORDER BY timestamp_ms, request_id").fetchall():
        where = f"trace {tid}"
        tags = {k: v for k, v in con.execute("SELECT key, value FROM trace_tags WHERE request_id = ?", (tid,))}
        meta = {k: v for k, v in con.execute("SELECT key, value FROM trace_request_metadata WHERE request_id = ?", (tid,))} if meta_table else {}
        exp = str(exp_id)
        src = by_id.get(meta.get("mlflow.sourceRun") or "") or by_name.get((exp, tags.get("experiment_name") or ""))
        if src is None:
            label = tags.get("experiment_name") or exps.get(exp, exp)
            src = new.get((exp, label))
            if src is None:
                src = new[(exp, label)] = Source(name=label, config={"mlflow": {"experiment": exps.get(exp, exp), "traces": True}},
                                                 key=f"{os.path.abspath(db)}#traces:{exp}:{label}", env_id=env_id)
        sources[id(src)] = src
        if tags.get("validate") == "True":
            src.reject(where, "a validation rollout (tag validate=True): not a training step, not imported")
            continue
        rows = con.execute("SELECT span_id, parent_span_id, name, type, status, start_time_unix_nano, end_time_unix_nano, content "
                           "FROM spans WHERE trace_id = ?", (tid,)).fetchall()
        try:
            step = shapes.to_step(tags["step"], "tags.step") if "step" in tags else 0
            traj = trace_trajectory([_span(r) for r in rows], where)
            info = traj["turns"][-1].setdefault("info", {})
            info["mlflow"] = {"traceId": tid, "tags": {k: v for k, v in tags.items() if not k.startswith("mlflow.")},
                              **({} if "reward" in traj else {"noReward": "the trace holds no reward_score"})}
            info["spans"] = [_span(r) for r in sorted(rows, key=lambda r: (r[5] or 0, r[0]))]
            traj = shapes.trajectory_body(traj, where)
        except shapes.ShapeError as e:
            src.reject(where, str(e))
            continue
        uid = f"sample-{tags['sample_index']}" if tags.get("sample_index") is not None else f"trace-{tid}"
        n = int(tags["rollout_n"]) if (tags.get("rollout_n") or "").lstrip("-").isdigit() else 0
        steps_of.setdefault(id(src), {}).setdefault(step, {}).setdefault(uid, []).append((n, traj))
        if src.started_at is None and isinstance(ts, (int, float)):
            src.started_at = ts / 1000
    for key, steps in steps_of.items():
        src = sources[key]
        for step in sorted(steps):
            groups = shapes.groups_body({u: [t for _, t in sorted(ts, key=lambda x: x[0])] for u, ts in steps[step].items()}, env_id)
            src.add_step({"step": step, "groups": groups}, sum(len(g["trajectories"]) for g in groups), f"{src.name} step {step}")
    return list(new.values())
