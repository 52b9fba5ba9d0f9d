"""Trackio's local projects: one SQLite database per project (Trackio writes
$TRACKIO_DIR/<project>.db, by default ~/.cache/huggingface/trackio/).

Tables read (trackio/sqlite_storage.py): metrics (run_id, run_name, step, timestamp ISO text,
metrics JSON of one trackio.log() call), configs (run_id, run_name, config JSON, created_at) and
system_metrics (GPU/CPU readings by time, without a step). Each Trackio run becomes a TurnLens run
(named after it, its config as config, Trackio's own `_`-prefixed keys under config.trackio);
every number of every log call is one row ("NaN"/"Infinity", as Trackio stores them, are kept as
such), at the row's `train/global_step` when it has one (transformers' TrackioCallback logs the
trainer's step so; Trackio's own step counts log calls). System metrics have no step and are
reported, not imported. Databases written before Trackio had run ids are read by run name.
Rollouts:
- a table with TRL's completions columns (GRPOTrainer.log with report_to="trackio": step, prompt,
  completion, a column per reward function, advantage) is that step's rollouts, read as the trl
  importer reads its parquet files (importers/trl.py: groups of num_generations by position,
  num_generations and reward_weights from the run's config);
- each trackio.Trace (the `traces` table; the session files under TRACKIO_DIR/traces are rendered
  from it) is a trajectory: its messages are turns as the chat importer splits them (an assistant
  message is an action, tool calls kept as JSON), metadata.reward its reward (required),
  metadata.advantage on every turn, metadata.step its step (else the log call's), metadata.success
  its outcome (else reward > 0), metadata group/group_id/prompt_id/uid its group (else its prompt);
  its spans and other metadata go to the last turn's info (`spans`, `trackio`). Traces at a step
  with a completions table join that step as groups of their own.
Other tables, histograms, images and media are rejected as not scalars. PATH: a project's .db
file, or a folder of them (TRACKIO_DIR).
"""

import datetime
import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import shapes
from . import chat, trl
from .base import Source, unsupported

_READS = "a Trackio project database (<project>.db under TRACKIO_DIR, default ~/.cache/huggingface/trackio) or a folder of them"


def _epoch(ts: Any) -> Optional[float]:
    if not isinstance(ts, str) or not ts:
        return None
    try:
        t = datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:  # Trackio writes datetime.now(timezone.utc).isoformat(); older versions local time
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.timestamp()


def _flatten(d: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and "_type" not in v:
            out.update(_flatten(v, key + "/"))
        else:
            out[key] = v
    return out


def _is_project(db: Path) -> bool:
    try:
        with open(db, "rb") as f:
            if f.read(16) != b"SQLite format 3\0":
                return False
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return "metrics" in {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return False


def read(path: str, env_id: str = "external") -> List[Source]:
    """a Trackio project (<project>.db, or the TRACKIO_DIR folder): every run's scalars, config, TRL completions tables and traces"""
    p = Path(path)
    dbs = [p] if p.is_file() else sorted(f for f in p.glob("*.db"))
    dbs = [d for d in dbs if _is_project(d)]
    if not dbs:
        raise unsupported(path, "trackio", _READS)
    return [s for db in dbs for s in _read_db(db, env_id)]


def _read_db(db: Path, env_id: str) -> List[Source]:
    project = db.stem
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables_of = {r[0]: {c[1] for c in con.execute(f'PRAGMA table_info("{r[0]}")')}
                     for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        by = "run_id" if "run_id" in tables_of.get("metrics", ()) else "run_name"
        runs: Dict[str, str] = {}  # run id (or name) -> name, in the order the runs first logged
        for rid, name in con.execute(f"SELECT {by}, run_name FROM metrics GROUP BY {by} ORDER BY MIN(id)"):
            runs.setdefault(rid, name)
        configs: Dict[str, Dict[str, Any]] = {}
        if "configs" in tables_of:
            cby = "run_id" if "run_id" in tables_of["configs"] else "run_name"
            for rid, name, cfg, created in con.execute(f"SELECT {cby}, run_name, config, created_at FROM configs ORDER BY id"):
                try:
                    configs[rid] = {"config": json.loads(cfg), "created": created}
                except ValueError:
                    configs[rid] = {"config": {}, "created": created, "bad": True}
                runs.setdefault(rid, name)
        out = []
        for rid, name in runs.items():
            cfg = configs.get(rid, {})
            raw = cfg.get("config") if isinstance(cfg.get("config"), dict) else {}
            config = {k: v for k, v in raw.items() if not k.startswith("_")}
            config["trackio"] = {"project": project, "runId": rid if by == "run_id" else None,
                                 **{k.lstrip("_"): v for k, v in raw.items() if k.startswith("_")}}
            src = Source(name=name, config=config, key=f"{os.path.abspath(db)}#{rid}", env_id=env_id)
            if cfg.get("bad"):
                src.reject("configs", "config: not valid JSON (run imported without it)")
            points = []
            tables: List[Tuple[str, int, List[Dict[str, Any]]]] = []  # (where, the row's step, rows) of TRL completions tables
            for row_id, step, ts, metrics in con.execute(f"SELECT id, step, timestamp, metrics FROM metrics WHERE {by} = ? ORDER BY id", (rid,)):
                where = f"metrics row {row_id}"
                try:
                    values = json.loads(metrics)
                except ValueError as e:
                    src.reject(where, f"metrics: not valid JSON ({e})")
                    continue
                if not isinstance(values, dict):
                    src.reject(where, "metrics: expected a JSON object")
                    continue
                good: Dict[str, Any] = {}
                for k, v in _flatten(values).items():
                    if isinstance(v, dict) and v.get("_type") == "trackio.table" and trl.is_completions_table(v.get("_value")):
                        tables.append((f"{where} {k}", step, v["_value"]))
                    elif isinstance(v, dict):
                        src.reject(f"{where} {k}", f"Trackio {v.get('_type', 'object')} is not a scalar (TurnLens imports scalar curves)")
                    elif isinstance(v, list):
                        src.reject(f"{where} {k}", "a list is not a scalar (TurnLens imports scalar curves)")
                    elif isinstance(v, str) and v not in ("NaN", "Infinity", "-Infinity"):
                        src.reject(f"{where} {k}", f"text {v[:40]!r} is not a number")
                    else:
                        good[shapes.sanitize_key(k)] = v
                if not good:
                    continue
                step = trl.global_step(good, step)
                try:
                    pt = shapes.metric_point(good, step, _epoch(ts), on_bad=lambda k, why: src.reject(f"{where} {k}", why))
                except shapes.ShapeError as e:
                    src.reject(where, str(e))
                    continue
                pt["where"] = where
                points.append(pt)
            src.add_metrics(points, f"{name} metrics")
            steps = trl.logged_tables(src, tables, raw, env_id)  # step -> its body; the traces' groups are added to it
            if "traces" in tables_of:
                _add_traces(con, tables_of["traces"], rid, by, src, steps, env_id)
            for step in sorted(steps):
                body = steps[step]
                src.add_step(body, sum(len(g["trajectories"]) for g in body["groups"]), f"{name} step {step}")
            if cfg.get("created") and _epoch(cfg["created"]) is not None:
                src.started_at = min(_epoch(cfg["created"]), src.started_at or float("inf"))
            if "system_metrics" in tables_of:
                sby = "run_id" if "run_id" in tables_of["system_metrics"] else "run_name"
                (n,) = con.execute(f"SELECT COUNT(*) FROM system_metrics WHERE {sby} = ?", (rid,)).fetchone()
                if n:
                    src.reject("system_metrics", f"{n} system metric reading(s) (GPU/CPU by time, no training step) not imported")
            out.append(src)
        return out
    except sqlite3.DatabaseError as e:
        raise unsupported(str(db), "trackio", _READS + f" (SQLite said: {e})") from None
    finally:
        con.close()


_GROUP_KEYS = ("group", "group_id", "prompt_id", "uid")


def _add_traces(con: sqlite3.Connection, cols: Any, rid: str, by: str, src: Source, steps: Dict[int, Dict[str, Any]], env_id: str) -> None:
    """The run's trackio.Trace rows (the `traces` table, Trackio's own record of them; the session files under
    TRACKIO_DIR/traces are rendered from it) as trajectories, grouped into `steps`."""
    tby = by if by in cols else "run_name"
    spans_col = "spans" if "spans" in cols else "'[]'"
    groups: Dict[int, Dict[str, List[Dict[str, Any]]]] = {}
    for tid, step, key, messages, metadata, spans in con.execute(
            f"SELECT id, step, key, messages, metadata, {spans_col} FROM traces WHERE {tby} = ? ORDER BY timestamp, id", (rid,)):
        where = f"trace {tid}"
        try:
            messages, metadata, spans = json.loads(messages), json.loads(metadata or "{}"), json.loads(spans or "[]")
        except ValueError as e:
            src.reject(where, f"not valid JSON ({e})")
            continue
        try:
            if not isinstance(metadata, dict):
                raise shapes.ShapeError("metadata: expected an object")
            if metadata.get("reward") is None:
                raise shapes.ShapeError("metadata.reward: required (a trajectory needs the episode's reward)")
            reward = shapes.to_number(metadata["reward"], "metadata.reward")
            step = shapes.to_step(metadata.get("step", step), "metadata.step")
            turns, prompt = chat.turns_of(messages, reward, where)
            if metadata.get("advantage") is not None:
                advantage = shapes.to_number(metadata["advantage"], "metadata.advantage")
                for t in turns:  # the episode's advantage, on every action as a sequence-level trainer applies it
                    t["advantage"] = advantage
            rest = {k: v for k, v in metadata.items() if k not in ("reward", "advantage", "step", "success")}
            info = turns[-1].setdefault("info", {})
            info["trackio"] = {"traceId": tid, "key": key, **({"metadata": rest} if rest else {})}
            if spans:
                info["spans"] = spans
            success = metadata.get("success")
            traj = shapes.trajectory_body({"turns": turns, "reward": reward,
                                           "success": bool(success) if success is not None else reward > 0}, where)
        except shapes.ShapeError as e:
            src.reject(where, str(e))
            continue
        gid = next((str(metadata[k]) for k in _GROUP_KEYS if metadata.get(k) is not None), None)
        if gid is None:
            gid = "trace-" + hashlib.sha1(prompt.encode()).hexdigest()[:16]
        groups.setdefault(step, {}).setdefault(gid, []).append(traj)
    for step, by_uid in groups.items():
        extra = shapes.groups_body(by_uid, env_id)
        if step in steps:  # beside a completions table of the same step: one step, its groups after the table's
            steps[step]["groups"].extend(extra)
        else:
            steps[step] = {"step": step, "groups": extra}
