"""W&B offline runs: the `offline-run-*` (or `run-*`) folders `wandb` writes under ./wandb with
WANDB_MODE=offline, each holding `run-<id>.wandb`.

That file is W&B's transaction log: a LevelDB-style log (a 7-byte file header ":W&B", 0xBEE1,
version 0; then 32 KiB blocks of records, each `crc32 | length u16 | type u8 (full, first, middle,
last)`; a block's tail shorter than a header is zero padding) whose records are `wandb.proto`
`Record` protobufs. They are decoded with the installed `wandb` package's own protobuf classes
(`pip install wandb`), so any field W&B adds is read as W&B defines it.
Read: the run record (id, name, project, group, tags, start time), config records (the config,
W&B's own `_wandb` key under config.wandb), history records (one `run.log()` call: `_step` and
its values; numbers become rows; histograms, images, other tables and text are rejected as not
scalars; W&B's bookkeeping keys `_step`, `_runtime`, `_timestamp` give step and wall time, and a
`train/global_step` value, which transformers' WandbCallback logs beside every row, the step) and the exit
record (exit code 0: succeeded, else failed; none: the run did not finish). A wandb.Table with TRL's
completions columns (GRPOTrainer.log with report_to="wandb": step, prompt, completion, a column per
reward function, advantage; the history record names its file, files/media/table/*.table.json) is
that step's rollouts, read as importers/trl.py reads TRL's tables. PATH: one run folder, its .wandb
file, or a folder of run folders (./wandb).
"""

import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .. import shapes
from . import trl
from .base import Source, mapped, unsupported

_READS = "W&B offline runs (a wandb/offline-run-* folder, its run-*.wandb file, or the wandb/ folder of them)"
_BLOCK, _HEADER = 32768, 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_CRC = {t: zlib.crc32(bytes([t])) for t in range(1, 5)}


def log_records(data: bytes) -> Iterator[Tuple[int, Optional[bytes], str]]:
    """(offset, record or None, problem) for each record of a W&B transaction log."""
    if len(data) < _HEADER or data[:4] != b":W&B":
        yield 0, None, "not a W&B transaction log (no ':W&B' header)"
        return
    ident, magic, version = struct.unpack("<4sHB", data[:_HEADER])
    if magic != 0xBEE1 or version != 0:
        yield 0, None, f"W&B transaction log of an unknown version (magic {magic:#x}, version {version})"
        return
    pos, parts, start = _HEADER, [], _HEADER
    while pos < len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # the block's zero padding
            pos += left
            continue
        if pos + _HEADER > len(data):
            yield pos, None, "truncated record header (the writer was probably still running)"
            return
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + _HEADER])
        if kind == 0 and length == 0 and crc == 0:  # zero fill to the end of a block
            pos += left
            continue
        body = data[pos + _HEADER:pos + _HEADER + length]
        if len(body) < length:
            yield pos, None, "truncated record (the writer was probably still running)"
            return
        if kind not in _CRC or zlib.crc32(body, _CRC[kind]) & 0xFFFFFFFF != crc:
            yield pos, None, "checksum mismatch (corrupt record); the rest of the file is skipped"
            return
        if kind == _FULL or kind == _FIRST:
            parts, start = [body], pos
        else:
            parts.append(body)
        pos += _HEADER + length
        if kind in (_FULL, _LAST):
            yield start, b"".join(parts), ""
            parts = []


def _runs(p: Path) -> List[Path]:
    if p.is_file():
        return [p]
    own = sorted(p.glob("*.wandb"))
    if own:
        return own[-1:]  # a resumed run folder holds one log per resume; the last is the whole run
    # latest-run is a link to one of the run folders: each run once
    return [sorted(d.glob("*.wandb"))[-1] for d in sorted(p.iterdir()) if d.is_dir() and not d.is_symlink() and list(d.glob("*.wandb"))]


def _flatten(d: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Nested logged dicts as "a/b" keys; W&B objects (with "_type") stay whole."""
    out: Dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and "_type" not in v and v:
            out.update(_flatten(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def read(path: str, env_id: str = "external") -> List[Source]:
    """W&B offline runs (wandb/offline-run-* folders, WANDB_MODE=offline; needs the wandb package): config, logged scalars and TRL completions tables"""
    p = Path(path)
    files = _runs(p) if p.exists() else []
    if not files:
        raise unsupported(path, "wandb", _READS)
    try:
        from wandb.proto import wandb_internal_pb2 as pb  # the record definitions of the W&B version installed
    except ImportError:
        raise ValueError("reading W&B offline runs needs the wandb package: pip install wandb") from None
    return [_read_log(f, pb, env_id) for f in files]


def _read_log(f: Path, pb: Any, env_id: str) -> Source:
    data = mapped(f)
    src = Source(name=f.parent.name, config={}, key=os.path.abspath(f.parent if f.parent.name != "wandb" else f), env_id=env_id,
                 status="failed")
    config: Dict[str, Any] = {}
    meta: Dict[str, Any] = {}
    points = []
    tables: List[Tuple[str, int, List[Dict[str, Any]]]] = []  # (where, the record's step, rows) of TRL completions tables
    exit_code = None
    first = True
    for offset, rec, problem in log_records(data):
        if rec is None:
            if first:
                raise unsupported(str(f), "wandb", _READS)
            src.reject(f"{f.name}@{offset}", problem)
            break
        first = False
        r = pb.Record()
        try:
            r.ParseFromString(rec)
        except Exception as e:  # protobuf's DecodeError: a record this wandb version cannot decode
            src.reject(f"{f.name}@{offset}", f"not a W&B record ({type(e).__name__})")
            continue
        which = r.WhichOneof("record_type")
        if which == "run":
            run = r.run
            meta.update({"runId": run.run_id, "project": run.project, "entity": run.entity, "group": run.run_group,
                         "jobType": run.job_type, "tags": list(run.tags), "notes": run.notes})
            if run.display_name:
                src.name = run.display_name
            if run.start_time.seconds:
                src.started_at = run.start_time.seconds + run.start_time.nanos / 1e9
            for item in run.config.update:
                config[item.key] = _json(item.value_json)
        elif which == "config":
            for item in r.config.update:
                if item.nested_key:
                    d = config
                    for k in item.nested_key[:-1]:
                        d = d.setdefault(k, {})
                    d[item.nested_key[-1]] = _json(item.value_json)
                else:
                    config[item.key] = _json(item.value_json)
            for item in r.config.remove:
                config.pop(item.key, None)
        elif which == "history":
            where = f"{f.name}@{offset}"
            values: Dict[str, Any] = {}
            step, wall = r.history.step.num, None
            # a logged dict arrives one item per leaf (nested_key: its path); rebuild it first, so a
            # media object ({"_type": "histogram", "bins": ..., "values": ...}) is judged whole
            row: Dict[str, Any] = {}
            for item in r.history.item:
                keys = list(item.nested_key) or [item.key]
                d = row
                for k in keys[:-1]:
                    d = d.setdefault(k, {}) if isinstance(d.get(k, {}), dict) else {}
                d[keys[-1]] = _json(item.value_json)
            for key, v in _flatten(row).items():
                if key == "_step":
                    step = int(v)
                elif key == "_timestamp":
                    wall = float(v)
                elif key.startswith("_"):
                    continue
                elif isinstance(v, bool) or isinstance(v, (int, float)) or v in ("NaN", "Infinity", "-Infinity"):
                    values[shapes.sanitize_key(key)] = v
                elif isinstance(v, dict) and v.get("_type") == "table-file":
                    rows = _table_rows(f.parent, v, src, f"{where} {key}")
                    if rows is not None and trl.is_completions_table(rows):
                        tables.append((f"{where} {key}", step, rows))
                    elif rows is not None:
                        src.reject(f"{where} {key}", "W&B table without TRL's completions columns (prompt, completion, advantage) is not imported")
                elif isinstance(v, dict):
                    src.reject(f"{where} {key}", f"W&B {v.get('_type', 'object')} is not a scalar (TurnLens imports scalar curves)")
                else:
                    src.reject(f"{where} {key}", f"{type(v).__name__} {str(v)[:40]!r} is not a number")
            if not values:
                continue
            step = trl.global_step(values, step)
            try:
                pt = shapes.metric_point(values, step, wall, on_bad=lambda k, why: src.reject(f"{where} {k}", why))
            except shapes.ShapeError as e:
                src.reject(where, str(e))
                continue
            pt["where"] = where
            points.append(pt)
        elif which == "exit":
            exit_code = r.exit.exit_code
    wb = config.pop("_wandb", None)
    src.config = {**config, "wandb": {**meta, **({"internal": wb} if wb is not None else {})}}
    src.status = "succeeded" if exit_code == 0 else "failed"
    src.add_metrics(points, f"{src.name} history")
    for step, body in sorted(trl.logged_tables(src, tables, config, env_id).items()):
        src.add_step(body, sum(len(g["trajectories"]) for g in body["groups"]), f"{src.name} step {step}")
    return src


def _table_rows(run_dir: Path, ref: Dict[str, Any], src: Source, where: str) -> Optional[List[Dict[str, Any]]]:
    """A logged wandb.Table's rows: the history record holds a reference ({"_type": "table-file", "path"}); the
    table itself is files/<path> in the run folder, {"columns": [...], "data": [[...], ...]}."""
    path = run_dir / "files" / str(ref.get("path", ""))
    if not path.is_file():
        src.reject(where, f"the table's file files/{ref.get('path')} is not in the run folder (import the whole "
                          "offline-run-* folder, not only its .wandb log)")
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            table = json.load(fh)
        cols, data = table["columns"], table["data"]
        return [dict(zip(cols, row)) for row in data]
    except (OSError, ValueError, KeyError, TypeError) as e:
        src.reject(where, f"W&B table file {ref.get('path')!r} unreadable ({type(e).__name__}: {e})")
        return None
