"""An MLflow file tracking store (`mlruns/`), for users moving over.

Layout read (MLflow's FileStore): mlruns/<experiment id>/meta.yaml (name), and per run
mlruns/<experiment id>/<run id>/meta.yaml (run_name, status), params/<key> (the value as text),
tags/<key>, metrics/<key> (lines `timestamp_ms value step`; keys with / are sub-folders).
PATH may be the mlruns folder, one experiment's folder, or one run's folder. Each MLflow run
becomes a TurnLens run named after it, with its params as config (numbers parsed) and its tags
and ids under config.mlflow; every metric line is one row.
"""

import math
import os
from pathlib import Path
from typing import Any, Dict, List

from .. import shapes
from .base import Source

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


def read(path: str, env_id: str = "external") -> List[Source]:
    """an MLflow file store (mlruns/ folder, an experiment folder, or a run folder): params and metric histories"""
    root = Path(path)
    runs = _run_dirs(root)
    if not runs:
        raise FileNotFoundError(f"{path}: no MLflow runs (folders with meta.yaml and metrics/ or params/)")
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
        points = []
        for key, f in _files(d / "metrics").items():
            mkey = shapes.sanitize_key(key)
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                if not line.strip():
                    continue
                where = f"metrics/{key}:{n}"
                parts = line.split()
                try:
                    if len(parts) not in (2, 3):
                        raise shapes.ShapeError(f"expected 'timestamp value step', got {line[:80]!r}")
                    ts, value = _number(parts[0], "timestamp"), _number(parts[1], "value")
                    step = int(parts[2]) if len(parts) == 3 and parts[2].lstrip("-").isdigit() else (parts[2] if len(parts) == 3 else 0)
                    points.append(shapes.metric_point({mkey: value}, step, ts / 1000 if ts > 0 else None))
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
        src.add_metrics(points, f"{name} metrics")
        out.append(src)
    return out
