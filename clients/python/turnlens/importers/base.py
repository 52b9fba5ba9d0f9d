"""What every importer shares: a Source (the run and its requests) and the upload that is safe to repeat.

Each reader turns PATH into one or more `Source`s: the run to create and its requests, every
request with a batch id derived from the content it carries. Importing again therefore finds
the same run (by the import id stored in its config: kind + absolute path) and sends the same
batch ids, which the server answers from what it stored (counted as "already present"); files
that grew since add only their new rows. Rows that cannot be read are reported with where and why,
never fatal.
"""

import hashlib
import json
import os
import shutil
import tempfile
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .. import spool
from ..shapes import ShapeError
from ..transport import ApiError, Transport

MAX_BATCH_VALUES = 20_000


@dataclass
class Source:
    """One run to import: how to create it, and its requests in order."""

    name: str
    config: Dict[str, Any]
    key: str  # what identifies this source across imports (kind + absolute path)
    records: List[Dict[str, Any]] = field(default_factory=list)  # {kind, batchId, body, rows}
    rejected: List[Tuple[str, str]] = field(default_factory=list)  # (where, why)
    status: str = "succeeded"
    env_id: Optional[str] = None
    estimator: Optional[str] = None

    def add_metrics(self, points: List[Dict[str, Any]], tag: str, rows: bool = True) -> None:
        """Points in request-sized batches; the batch id is a digest of the batch's content.
        rows=False: derived metrics (e.g. per-step means) that are not rows of the source."""
        batch: List[Dict[str, Any]] = []
        n = 0
        for p in points:
            batch.append(p)
            n += len(p["values"])
            if n >= MAX_BATCH_VALUES:
                self._add("metrics", {"points": batch}, n if rows else 0, tag)
                batch, n = [], 0
        if batch:
            self._add("metrics", {"points": batch}, n if rows else 0, tag)

    def add_step(self, body: Dict[str, Any], rows: int, tag: str) -> None:
        self._add("steps", body, rows, tag)

    def _add(self, kind: str, body: Dict[str, Any], rows: int, tag: str) -> None:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]
        self.records.append({"kind": kind, "batchId": f"imp-{digest}", "body": body, "rows": rows, "tag": tag})

    def reject(self, where: str, why: str) -> None:
        self.rejected.append((where, why))


@dataclass
class ImportReport:
    kind: str
    source: str
    run_id: Optional[str] = None
    created: bool = False
    imported: int = 0  # rows newly stored
    already: int = 0  # rows the server had from an earlier import
    rejected: List[Tuple[str, str]] = field(default_factory=list)
    spool: Optional[str] = None  # offline: the spool written instead of sending
    spooled: int = 0  # offline: rows in that spool

    def as_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "runId": self.run_id, "created": self.created,
                "imported": self.imported, "alreadyPresent": self.already,
                "rejected": [{"where": w, "reason": r} for w, r in self.rejected],
                **({"spool": self.spool, "spooled": self.spooled} if self.spool else {})}

    def summary(self, show: int = 10) -> str:
        head = (f"spool {self.spool}: {self.spooled} rows spooled" if self.spool else
                f"run {self.run_id}{' (new)' if self.created else ''}: {self.imported} rows imported, {self.already} already present")
        lines = [f"{self.kind} {self.source} -> {head}, {len(self.rejected)} rejected"]
        for why, n in Counter(r for _, r in self.rejected).most_common():
            lines.append(f"  rejected x{n}: {why}")
        for where, why in self.rejected[:show]:
            lines.append(f"    {where}: {why}")
        return "\n".join(lines)


def run_import(kind: str, path: str, project: str = "default", name: Optional[str] = None, env_id: str = "external",
               url: Optional[str] = None, token: Optional[str] = None, mode: Optional[str] = None,
               spool_root: Optional[str] = None, log: Callable[[str], None] = lambda _: None) -> List[ImportReport]:
    """Imports PATH (files, a folder, or a tar/zip of either). Online: sends to the server. Offline
    (mode or $TURNLENS_MODE): writes one client spool per run under `spool_root` (default
    $TURNLENS_DIR/spool) for `turnlens sync` or the dashboard's import job; nothing is sent."""
    from . import KINDS
    from .archive import content_root, extract, kind_of

    if kind not in KINDS:
        raise ValueError(f"kind: unknown importer {kind!r}; known: {', '.join(sorted(KINDS))}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    mode = (mode or os.environ.get("TURNLENS_MODE") or "online").lower()
    if mode not in ("online", "offline"):
        raise ValueError(f"mode: expected 'online' or 'offline', got {mode!r}")
    tmp = None
    try:
        read_path = path
        if kind_of(path) is not None:
            tmp = tempfile.mkdtemp(prefix="turnlens-import-")
            log(f"extracting {os.path.basename(path)}")
            read_path = str(content_root(extract(path, os.path.join(tmp, "x"))))
        sources = KINDS[kind](read_path, env_id=env_id)
        if tmp:  # keys and paths name the archive, not the temporary folder: a re-import finds the same run
            _rebase(sources, read_path, os.path.abspath(path) + "!")
        for src in sources:
            log(f"read {src.key}: {len(src.records)} request(s), {sum(r['rows'] for r in src.records)} row(s), {len(src.rejected)} rejected")
        one = name if len(sources) == 1 else None
        if mode == "offline":
            root = Path(spool_root) if spool_root else spool.home() / "spool"
            return [_spool_source(root, i, kind, src, project, one, env_id) for i, src in enumerate(sources)]
        t = Transport(url, token)
        try:
            return [_import_source(t, kind, src, project, one, env_id) for src in sources]
        finally:
            t.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _rebase(sources: List[Source], prefix: str, to: str) -> None:
    def fix(v: Any) -> Any:
        if isinstance(v, str) and (v == prefix or v.startswith(prefix + os.sep)):
            return to + v[len(prefix) + 1:]
        return v

    for src in sources:
        src.key = fix(os.path.abspath(src.key))
        src.config = {k: fix(v) for k, v in src.config.items()}


def create_body(kind: str, src: Source, project: str, name: Optional[str], env_id: str) -> Dict[str, Any]:
    """The POST /runs/import body of a source; config.turnlensImport.id (kind + source key) is how a
    re-import finds the run it made."""
    import_id = hashlib.sha256(f"{kind}\0{src.key}".encode()).hexdigest()[:24]
    config = dict(src.config)
    config["turnlensImport"] = {"kind": kind, "source": src.key, "id": import_id}
    body: Dict[str, Any] = {"project": project, "name": (name or src.name)[:200], "config": config,
                            "envId": src.env_id or env_id}
    if src.estimator:
        body["estimator"] = src.estimator
    return body


def _spool_source(root: Path, i: int, kind: str, src: Source, project: str, name: Optional[str], env_id: str) -> ImportReport:
    """One run's client spool (spool.py's layout): run.json, records.jsonl ending with the finish
    record, and rejected.jsonl ({where, reason} per row the reader could not use)."""
    body = create_body(kind, src, project, name, env_id)
    d = root / f"{i:04d}-{body['config']['turnlensImport']['id']}"
    d.mkdir(parents=True, exist_ok=False)
    spool.write_json_atomic(d / "run.json", {"url": None, "create": body, "runId": None, "writeKey": None})
    spool.append_lines(d / "records.jsonl", src.records + [{"kind": "finish", "batchId": None, "body": {"status": src.status}}])
    spool.append_lines(d / "rejected.jsonl", [{"where": w, "reason": r} for w, r in src.rejected])
    return ImportReport(kind, src.key, rejected=list(src.rejected), spool=str(d), spooled=sum(r["rows"] for r in src.records))


def _find_run(t: Transport, project: str, import_id: str) -> Optional[Dict[str, Any]]:
    q = urllib.parse.urlencode({"project": project, "config": f'turnlensImport.id="{import_id}"', "pageSize": 10})
    _, out = t.request("GET", f"/api/v1/runs?{q}", deadline=None)
    for r in out.get("runs", []):
        if isinstance(r.get("config"), dict) and (r["config"].get("turnlensImport") or {}).get("id") == import_id:
            return r
    return None


def _import_source(t: Transport, kind: str, src: Source, project: str, name: Optional[str], env_id: str) -> ImportReport:
    body = create_body(kind, src, project, name, env_id)
    import_id = body["config"]["turnlensImport"]["id"]
    rep = ImportReport(kind, src.key, rejected=list(src.rejected))
    run = _find_run(t, project, import_id)
    if run is None:
        _, run = t.request("POST", "/api/v1/runs/import", body, deadline=None)
        rep.created = True
        key = run.get("writeKey")
        if key:
            spool.save_write_key(run["id"], key)
    else:
        key = spool.load_write_key(run["id"])
        if run.get("status") != "running":
            try:
                t.request("POST", f"/api/v1/runs/{run['id']}/resume", {}, write_key=key, deadline=None)
            except ApiError as e:
                if e.status not in (404, 409):
                    raise
    rep.run_id = run["id"]
    for rec in src.records:
        body = dict(rec["body"], batchId=rec["batchId"])
        try:
            status, _ = t.request("POST", f"/api/v1/runs/{rep.run_id}/{rec['kind']}", body, write_key=key, deadline=None)
        except ApiError as e:
            rep.rejected.append((rec["tag"], f"server refused {rec['rows']} row(s): {e.error}"
                                 + "".join(f"; {i.get('path')}: {i.get('message')}" for i in e.issues[:3] if isinstance(i, dict))))
            continue
        if status == 200:
            rep.already += rec["rows"]
        else:
            rep.imported += rec["rows"]
    try:
        t.request("POST", f"/api/v1/runs/{rep.run_id}/finish", {"status": src.status}, write_key=key, deadline=None)
    except ApiError as e:
        if e.status != 409:
            raise
    return rep


def json_objects(f: Path, src: Source) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(file:line, object) for each JSON-object line of a JSONL file; blank lines are skipped, any
    other line is rejected on `src` with its line number and reason."""
    for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{f.name}:{n}"
        try:
            row = json.loads(line)
        except ValueError as e:
            src.reject(where, f"not valid JSON ({e.msg} at column {e.colno})")
            continue
        if not isinstance(row, dict):
            src.reject(where, "expected a JSON object")
            continue
        yield where, row
