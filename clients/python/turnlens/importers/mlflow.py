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
"""

import math
import os
import sqlite3
from pathlib import Path
from typing import Any, Dict, List

from .. import shapes
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
