"""What every importer shares: a Source (the run and its requests) and the upload that is safe to repeat.

Each reader turns PATH into one or more `Source`s: the run to create and its requests, every
request with a batch id derived from the content it carries. Importing again therefore finds
the same run (by the import id stored in its config: kind + absolute path) and sends the same
batch ids, which the server answers from what it stored (counted as "already present"); files
that grew since add only their new rows. Rows that cannot be read are reported with where and why,
never fatal. A metric value that a later value of the same key and step overrides (TurnLens keeps
one value per key and step, as the source's own "latest value" does) is counted as replaced, not
imported. A source with nothing importable makes no run. Runs keep the source's own start and end
times (Source.started_at / finished_at, epoch seconds; by default the first and last wall time of
its metric points).
"""

import datetime
import hashlib
import json
import mmap
import os
import shutil
import sqlite3
import tempfile
import time
import urllib.parse
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .. import spool
from ..run import send_record
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
    replaced: List[Tuple[str, str]] = field(default_factory=list)  # (where, why): values a later one overrode
    status: str = "succeeded"
    env_id: Optional[str] = None
    estimator: Optional[str] = None
    started_at: Optional[float] = None  # epoch seconds: when the source's training started / ended
    finished_at: Optional[float] = None

    def add_metrics(self, points: List[Dict[str, Any]], tag: str, rows: bool = True) -> None:
        """Points in request-sized batches; the batch id is a digest of the batch's content.
        Points are in the source's order: of two values of one key at one step, the later is kept
        and the earlier counted as replaced. rows=False: derived metrics (e.g. per-step means) that
        are not rows of the source."""
        last: Dict[Tuple[str, int], int] = {}
        for i, p in enumerate(points):
            for k in p["values"]:
                last[(k, p["step"])] = i
        if len(last) < sum(len(p["values"]) for p in points):
            kept = []
            for i, p in enumerate(points):
                vals = {}
                for k, v in p["values"].items():
                    j = last[(k, p["step"])]
                    if j == i:
                        vals[k] = v
                    elif rows:
                        self.replaced.append((f"{p.get('where') or tag}: {k} step {p['step']}",
                                              f"value {v!r} replaced by the later value {points[j]['values'][k]!r} at the same step"))
                if vals:
                    kept.append(dict(p, values=vals))
            points = kept
        for p in points:
            t = p.get("wallTime")
            if t is not None and t > 0:
                self.started_at = t if self.started_at is None else min(self.started_at, t)
                self.finished_at = t if self.finished_at is None else max(self.finished_at, t)
        batch: List[Dict[str, Any]] = []
        n = 0
        for p in points:
            p.pop("where", None)
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

    def rows(self) -> int:
        return sum(r["rows"] for r in self.records)


class UnsupportedFile(ValueError):
    """PATH is not what the chosen importer reads; the message says what it is and what is read."""


def describe(path: str) -> str:
    """What a file or folder looks like, in a few words, for an error message."""
    p = Path(path)
    if p.is_dir():
        names = sorted(x.name for x in p.iterdir())[:8]
        return f"a folder holding {', '.join(names) if names else 'nothing'}"
    try:
        with open(p, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        return f"an unreadable file ({e.strerror})"
    if not head:
        return "an empty file"
    if head.startswith(b"SQLite format 3\0"):
        try:
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            try:
                tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            finally:
                con.close()
            return f"an SQLite database with tables {', '.join(tables[:10]) or '(none)'}"
        except sqlite3.Error:
            return "an SQLite database"
    if zipfile.is_zipfile(p):
        return "a zip archive"
    if "tfevents" in p.name:
        return "a TensorBoard event file"
    if p.suffix == ".wandb":
        return "a W&B offline transaction log"
    text = head.decode("utf-8", "replace")
    if "\ufffd" in text or "\0" in text:
        return f"a binary file ({p.suffix or 'no extension'})"
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if first.startswith("{"):
        try:
            keys = sorted(json.loads(first))[:8]
            return f"a JSON lines file whose first object has the keys {', '.join(keys)}"
        except ValueError:
            return "a JSON file"
    return f"a text file starting {first[:60]!r}"


def is_text(path: str) -> bool:
    """Whether a file starts as UTF-8 text (no NUL bytes): what every JSON-lines reader needs."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start > len(head) - 4  # a character cut at the end of the sample
    return True


def unsupported(path: str, kind: str, reads: str) -> UnsupportedFile:
    """The error for a PATH the `kind` importer cannot read: what PATH is, what `kind` reads, and the
    other importers (so the user can pick the right one)."""
    from . import KINDS

    others = ", ".join(k for k in sorted(KINDS) if k != kind)
    return UnsupportedFile(f"{os.path.basename(os.path.normpath(path))} is {describe(path)}; the {kind} importer reads {reads}. "
                           f"Other formats: {others} (`turnlens import --help` says what each reads)")


def iso(t: Optional[float]) -> Optional[str]:
    """Epoch seconds as the ISO 8601 UTC time the server takes (startedAt, finishedAt)."""
    if t is None:
        return None
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class ImportReport:
    kind: str
    source: str
    run_id: Optional[str] = None
    created: bool = False
    imported: int = 0  # rows newly stored
    already: int = 0  # rows the server had from an earlier import
    rejected: List[Tuple[str, str]] = field(default_factory=list)
    replaced: List[Tuple[str, str]] = field(default_factory=list)  # rows a later row of the same key and step overrode
    spool: Optional[str] = None  # offline: the spool written instead of sending
    spooled: int = 0  # offline: rows in that spool
    kept: Optional[str] = None  # online: the spool holding what the server refused, for `turnlens sync`
    note: str = ""  # e.g. why no run was made

    def as_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "runId": self.run_id, "created": self.created,
                "imported": self.imported, "alreadyPresent": self.already, "replaced": len(self.replaced),
                "rejected": [{"where": w, "reason": r} for w, r in self.rejected],
                "replacedRows": [{"where": w, "reason": r} for w, r in self.replaced[:100]],
                **({"note": self.note} if self.note else {}),
                **({"spool": self.spool, "spooled": self.spooled} if self.spool else {}),
                **({"refusedKeptIn": self.kept} if self.kept else {})}

    def summary(self, show: int = 10) -> str:
        if self.spool:
            head = f"spool {self.spool}: {self.spooled} rows spooled"
        elif self.run_id is None:
            head = "no run"
        else:
            head = f"run {self.run_id}{' (new)' if self.created else ''}: {self.imported} rows imported, {self.already} already present"
        lines = [f"{self.kind} {self.source} -> {head}, {len(self.replaced)} replaced, {len(self.rejected)} rejected"]
        if self.note:
            lines.append(f"  {self.note}")
        if self.kept:
            lines.append(f"  what the server refused is kept in {self.kept}: `turnlens sync {self.kept}` sends it again")
        for why, n in Counter(r for _, r in self.rejected).most_common(show):
            lines.append(f"  rejected x{n}: {why}")
        for where, why in self.rejected[:show]:
            lines.append(f"    {where}: {why}")
        for where, why in self.replaced[:show]:
            lines.append(f"  replaced {where}: {why}")
        return "\n".join(lines)


def run_import(kind: str, path: str, project: str = "default", name: Optional[str] = None, env_id: str = "external",
               url: Optional[str] = None, token: Optional[str] = None, mode: Optional[str] = None,
               spool_root: Optional[str] = None, log: Callable[[str], None] = lambda _: None,
               write_key: Optional[str] = None) -> List[ImportReport]:
    """Imports PATH (files, a folder, or a tar/zip of either). Online: sends to the server. Offline
    (mode or $TURNLENS_MODE): writes one client spool per run under `spool_root` (default
    $TURNLENS_DIR/spool) for `turnlens sync` or the dashboard's import job; nothing is sent.
    `write_key`: the key of the run an earlier import made (needed on another machine than that
    import's, which keeps it in $TURNLENS_DIR/keys)."""
    from . import KINDS
    from .archive import content_root, extract, kind_of

    if kind not in KINDS:
        raise ValueError(f"kind: unknown importer {kind!r}; known: {', '.join(sorted(KINDS))}")
    url_reader = getattr(KINDS[kind], "reads_url", False)  # PATH is a server's URL (agentlightning's store)
    if url_reader and not path.startswith(("http://", "https://")):
        raise ValueError(f"path: the {kind} importer reads a URL (http://HOST:PORT), got {path!r}")
    if not url_reader and not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    mode = (mode or os.environ.get("TURNLENS_MODE") or "online").lower()
    if mode not in ("online", "offline"):
        raise ValueError(f"mode: expected 'online' or 'offline', got {mode!r}")
    tmp = None
    try:
        read_path = path
        # some formats are zips themselves (an Inspect .eval log): those the reader opens as they are
        if not url_reader and kind_of(path) is not None and not any(path.endswith(x) for x in getattr(KINDS[kind], "native_suffixes", ())):
            tmp = tempfile.mkdtemp(prefix="turnlens-import-")
            log(f"extracting {os.path.basename(path)}")
            read_path = str(content_root(extract(path, os.path.join(tmp, "x"))))
        try:
            sources = KINDS[kind](read_path, env_id=env_id)
        except UnsupportedFile as e:
            if not tmp:
                raise
            # name the archive, not the temporary folder it was extracted to
            inner = os.path.basename(os.path.normpath(read_path))
            text = str(e)
            if text.startswith(inner + " is "):
                text = text[len(inner) + 4:]
            raise UnsupportedFile(f"{os.path.basename(path)} holds {text}") from None
        if not sources:  # e.g. a folder without one file of the format: say so rather than report nothing
            raise UnsupportedFile(f"nothing to import in {path}: {describe(read_path)}; the {kind} importer found no file it reads")
        if tmp:  # keys and paths name the archive, not the temporary folder: a re-import finds the same run
            _rebase(sources, read_path, os.path.abspath(path) + "!")
        for src in sources:
            log(f"read {src.key}: {len(src.records)} request(s), {src.rows()} row(s), {len(src.replaced)} replaced, {len(src.rejected)} rejected")
        one = name if len(sources) == 1 else None
        if name and one is None:
            log(f"--name not applied: {os.path.basename(os.path.normpath(path))} holds {len(sources)} runs, each named from its files")
        if mode == "offline":
            root = Path(spool_root) if spool_root else spool.home() / "spool"
            runs = any(src.records for src in sources)
            return [_spool_source(root, i, kind, src, project, one, env_id, runs) for i, src in enumerate(sources)]
        t = Transport(url, token)
        try:
            return [_import_source(t, kind, src, project, one, env_id, write_key) for src in sources]
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
    if src.started_at is not None:
        body["startedAt"] = iso(src.started_at)
    if src.finished_at is not None:
        body["finishedAt"] = iso(src.finished_at)
    return body


NOTHING = "nothing importable (every row was rejected or the source is empty): no run created"


def finish_body(src: Source) -> Dict[str, Any]:
    return {"status": src.status, **({"finishedAt": iso(src.finished_at)} if src.finished_at is not None else {})}


def finish_record(src: Source) -> Dict[str, Any]:
    """The spool record that finishes the run, after everything else."""
    return {"kind": "finish", "batchId": None, "body": finish_body(src)}


def _spool_source(root: Path, i: int, kind: str, src: Source, project: str, name: Optional[str], env_id: str,
                  runs: bool = True) -> ImportReport:
    """One run's client spool (spool.py's layout): run.json, records.jsonl ending with the finish
    record, rejected.jsonl ({where, reason} per row the reader could not use) and replaced.jsonl
    ({where, reason} per value a later one of the same key and step overrode). A source with nothing
    importable gets no run: only its rejected.jsonl, beside source.json ({source}), when other sources
    of the import make runs (`runs`; with none, the import fails, naming the rejected rows)."""
    body = create_body(kind, src, project, name, env_id)
    d = root / f"{i:04d}-{body['config']['turnlensImport']['id']}"
    if not src.records:
        if src.rejected and runs:
            # no run.json (sync skips it, no run is made): the import job still reports each row and why
            d.mkdir(parents=True, exist_ok=False)
            spool.write_json_atomic(d / "source.json", {"source": src.key})
            spool.append_lines(d / "rejected.jsonl", [{"where": w, "reason": r} for w, r in src.rejected])
        return ImportReport(kind, src.key, rejected=list(src.rejected), replaced=list(src.replaced), note=NOTHING)
    d.mkdir(parents=True, exist_ok=False)
    spool.write_json_atomic(d / "run.json", {"url": None, "create": body, "runId": None, "writeKey": None})
    spool.append_lines(d / "records.jsonl", src.records + [finish_record(src)])
    spool.append_lines(d / "rejected.jsonl", [{"where": w, "reason": r} for w, r in src.rejected])
    spool.append_lines(d / "replaced.jsonl", [{"where": w, "reason": r} for w, r in src.replaced])
    return ImportReport(kind, src.key, rejected=list(src.rejected), replaced=list(src.replaced), spool=str(d), spooled=src.rows())


def _keep_refused(t: Transport, create: Dict[str, Any], run_id: Optional[str], key: Optional[str],
                  refused: List[Dict[str, Any]], src: Source) -> str:
    """A client spool (spool.py's layout) holding the refused records and the finish after them;
    with no run (every request refused, the run removed) sync makes it again from `create`."""
    d = spool.home() / "spool" / f"import-{create['config']['turnlensImport']['id'][:16]}-{int(time.time())}"
    d.mkdir(parents=True, exist_ok=True)
    spool.write_json_atomic(d / "run.json", {"url": t.url, "create": create, "runId": run_id, "writeKey": key})
    spool.append_lines(d / "refused.jsonl", refused + [finish_record(src)])
    return str(d)


def _find_run(t: Transport, project: str, import_id: str) -> Optional[Dict[str, Any]]:
    q = urllib.parse.urlencode({"project": project, "config": f'turnlensImport.id="{import_id}"', "pageSize": 10})
    _, out = t.request("GET", f"/api/v1/runs?{q}", deadline=None)
    for r in out.get("runs", []):
        if isinstance(r.get("config"), dict) and (r["config"].get("turnlensImport") or {}).get("id") == import_id:
            return r
    return None


class WriteKeyRefused(ValueError):
    """The server refused a write to a run an earlier import made: this machine lacks its key."""


def _no_key(run_id: str, given: bool) -> WriteKeyRefused:
    return WriteKeyRefused(
        f"run {run_id} (made by an earlier import of this source) refused the write key "
        + ("given with --write-key" if given else "(this machine has none: the import that made the run keeps it in its "
           "$TURNLENS_DIR/keys/" + run_id + ")")
        + "; pass that run's key with --write-key KEY (or the write_key argument)")


_TIME_FIELDS = ("startedAt", "finishedAt")


def _older_server(e: ApiError) -> bool:
    """A server that predates startedAt/finishedAt refuses them as unknown keys (its schemas are strict)."""
    text = e.error + " " + " ".join(f"{i.get('path')} {i.get('message')}" for i in e.issues if isinstance(i, dict))
    return e.status == 400 and any(f in text for f in _TIME_FIELDS)


def _post_tolerant(t: Transport, path: str, body: Dict[str, Any], key: Optional[str]) -> Tuple[int, Any]:
    try:
        return t.request("POST", path, body, write_key=key, deadline=None)
    except ApiError as e:
        if not _older_server(e):
            raise
        return t.request("POST", path, {k: v for k, v in body.items() if k not in _TIME_FIELDS}, write_key=key, deadline=None)


def _import_source(t: Transport, kind: str, src: Source, project: str, name: Optional[str], env_id: str,
                   write_key: Optional[str] = None, finish: bool = True) -> ImportReport:
    """Finds or makes the source's run and sends its records. finish=False (`turnlens watch`, which sends a
    source in pieces as they land) leaves the run running, as a live run is."""
    create = create_body(kind, src, project, name, env_id)
    import_id = create["config"]["turnlensImport"]["id"]
    rep = ImportReport(kind, src.key, rejected=list(src.rejected), replaced=list(src.replaced))
    if not src.records:
        rep.note = NOTHING
        return rep
    run = _find_run(t, project, import_id)
    if run is None:
        _, run = _post_tolerant(t, "/api/v1/runs/import", create, None)
        rep.created = True
        key = run.get("writeKey")
        if key:
            spool.save_write_key(run["id"], key)
    else:
        if name and run.get("name") != create["name"]:
            # the server has no rename: the run keeps its name, and the report says so instead of dropping --name silently
            rep.note = (f"--name {create['name']!r} not applied: this source's run {run['id']} exists (from an earlier import) "
                        f"as {run.get('name')!r} and a run's name cannot be changed; delete that run to import under the new name")
        key = write_key or spool.load_write_key(run["id"])
        if run.get("status") != "running":
            try:
                t.request("POST", f"/api/v1/runs/{run['id']}/resume", {}, write_key=key, deadline=None)
            except ApiError as e:
                if e.status == 403:
                    raise _no_key(run["id"], bool(write_key)) from None
                if e.status not in (404, 409):
                    raise
    rep.run_id = run["id"]
    refused: List[Dict[str, Any]] = []  # records the server refused (4xx), each with its reason
    for rec in src.records:
        body = dict(rec["body"], batchId=rec["batchId"])
        try:
            status, _ = t.request("POST", f"/api/v1/runs/{rep.run_id}/{rec['kind']}", body, write_key=key, deadline=None)
        except ApiError as e:
            if e.status == 403 and not rep.created:
                raise _no_key(rep.run_id, bool(write_key)) from None
            reason = f"server refused {rec['rows']} row(s): {e.error}" + "".join(
                f"; {i.get('path')}: {i.get('message')}" for i in e.issues[:3] if isinstance(i, dict))
            # a step too large for one request goes in parts, as the client sends one
            if e.status == 413 and rec["kind"] == "steps" and send_record(t, rep.run_id, key, rec) is None:
                rep.imported += rec["rows"]
                continue
            rep.rejected.append((rec["tag"], reason))
            refused.append(dict(rec, refused=reason))
            continue
        if status == 200:
            rep.already += rec["rows"]
        else:
            rep.imported += rec["rows"]
    if write_key and not rep.created and (rep.imported or rep.already):  # the key works: keep it for the next import here
        spool.save_write_key(rep.run_id, write_key)
    empty = rep.created and rep.imported == 0  # the server refused every request
    if refused:
        # Nothing the source gave is dropped: the refused requests wait in a spool, with the run's
        # finish behind them (the run stays open), until `turnlens sync` delivers them.
        rep.kept = _keep_refused(t, create, None if empty else rep.run_id, key, refused, src)
    if not finish:
        return rep
    if empty:
        src.status = "failed"
    if not refused or empty:
        try:
            _post_tolerant(t, f"/api/v1/runs/{rep.run_id}/finish", finish_body(src), key)
        except ApiError as e:
            if e.status != 409:
                raise
    if empty:  # leave no empty run behind (a run must be finished before it can be deleted; sync makes it again)
        try:
            t.request("DELETE", f"/api/v1/runs/{rep.run_id}", deadline=None)
            rep.note, rep.run_id, rep.created = f"{NOTHING} (the server refused every row; the run was removed again)", None, False
        except ApiError as e:
            rep.note = f"the server refused every row; run {rep.run_id} is marked failed (could not remove it: {e.error})"
    return rep


# Longest line a reader takes: the server's default body limit (no request could carry a longer row).
MAX_LINE = 64 << 20


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"


def text_lines(f: Path, src: Source, where: str, max_line: int = MAX_LINE) -> Iterator[Tuple[int, str]]:
    """(line number, text) of each line of `f`, read a line at a time, never the whole file (an
    archive's member can be gigabytes); a line longer than `max_line` is rejected on `src` as
    `where:N` and skipped without being held."""
    with open(f, "rb") as fh:
        n = 0
        while True:
            raw = fh.readline(max_line + 1)
            if not raw:
                return
            n += 1
            if len(raw) > max_line and not raw.endswith(b"\n"):
                size = len(raw)
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(1 << 20)
                    size += len(raw)
                src.reject(f"{where}:{n}", f"line {n} is {_mb(size)}, longer than the {_mb(max_line)} a line may hold "
                                           "(the server's body limit: no request could carry it); skipped")
                continue
            yield n, raw.decode("utf-8", "replace").rstrip("\r\n")


def mapped(f: Path) -> Any:
    """The file's bytes as a read-only map (sliced like bytes, paged in as read), not read into memory."""
    with open(f, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(fh.fileno()).st_size else b""


def json_objects(f: Path, src: Source) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(file:line, object) for each JSON-object line of a JSONL file; blank lines are skipped, any
    other line is rejected on `src` with its line number and reason."""
    for n, line in text_lines(f, src, f.name):
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
