"""`turnlens watch FORMAT DIR`: follows a folder a trainer is writing and sends each step as it lands.

The watch polls DIR (every 0.5 s by default) and sends what is new and complete, read by the
format's importer (importers/*.py), so one format has one reader and a watched run is the run
`turnlens import FORMAT DIR` makes (an import after the watch finds the run and its steps already
present, by their batch ids; curves the watch sent line by line come again in the import's larger
batches and are stored over the same points, one value per key and step; and it finishes the run).

What is complete:
- step formats, one file or folder per step: prime-rl (step_<n>/ once its STABLE marker exists),
  verl (<step>.jsonl once a later step's file exists or the file, ending in a newline, has been
  quiet for --quiet seconds), trl (completions_<step>.parquet once its parquet footer is written);
- line formats, appended a line at a time: jsonl (generic) and verl-file: each line that ends in a
  newline. A generic file's `run` line (its first) is read again with every later piece so that
  its estimator and config apply; its `finish` line finishes the run.

Where it stopped is kept in $TURNLENS_DIR/watch/<id>.json (id: a digest of the format and DIR's
absolute path): the steps sent and, per file, the bytes and lines sent. It is saved after each
piece the server stored, so a restarted watch continues and sends nothing twice. Ctrl-C (or
SIGTERM) lets the piece in flight finish and be recorded, then stops; a second Ctrl-C stops at once.
A piece the server stored just before a kill (SIGKILL, a second Ctrl-C) is sent again with its batch
ids, which the server answers from what it has: nothing is stored twice. The run is left running when the watch stops: `turnlens import FORMAT DIR` finishes it.
"""

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import spool
from .importers import KINDS, trl
from .importers.base import MAX_LINE, ImportReport, Source, _import_source, _post_tolerant, finish_body
from .transport import Transport

STEP_FORMATS = ("prime-rl", "verl", "trl")
LINE_FORMATS = ("jsonl", "verl-file")
FORMATS = STEP_FORMATS + LINE_FORMATS
_PRIME_STEP = re.compile(r"^step_(\d+)$")
_TRL_FILE = re.compile(r"^completions_(\d+)\.parquet$")


def state_path(kind: str, path: str) -> Path:
    digest = hashlib.sha256(f"{kind}\0{os.path.abspath(path)}".encode()).hexdigest()[:24]
    return spool.home() / "watch" / f"{digest}.json"


class Watch:
    """One FORMAT DIR followed: poll() sends what is new and complete and returns how many pieces it sent."""

    def __init__(self, kind: str, path: str, project: str = "default", name: Optional[str] = None,
                 env_id: str = "external", url: Optional[str] = None, token: Optional[str] = None,
                 quiet: float = 2.0, log: Callable[[str], None] = lambda _: None):
        if kind not in FORMATS:
            raise ValueError(f"format: `turnlens watch` follows {', '.join(FORMATS)}; got {kind!r}")
        self.kind, self.path = kind, Path(os.path.abspath(path))
        if kind in STEP_FORMATS and self.path.is_file():
            raise ValueError(f"DIR: {path} is a file; `turnlens watch {kind}` follows the folder the trainer writes its steps to")
        self.project, self.name, self.env_id, self.quiet, self.log = project, name, env_id, quiet, log
        self.transport = Transport(url, token)
        self.state_file = state_path(kind, path)
        self.state: Dict[str, Any] = {"format": kind, "path": str(self.path), "steps": [], "files": {}}
        if self.state_file.exists():
            self.state.update(json.loads(self.state_file.read_text()))
        self.sent_steps = set(self.state["steps"])
        if kind == "trl":  # pyarrow's parquet reading loads in a second: before the first step lands, not after
            try:
                import pyarrow.dataset  # noqa: F401
                import pyarrow.parquet  # noqa: F401
            except ImportError:
                pass  # the reader says what to install

    def close(self) -> None:
        self.transport.close()

    def _save(self) -> None:
        self.state["steps"] = sorted(self.sent_steps)
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        spool.write_json_atomic(self.state_file, self.state)

    def poll(self, stop: Optional[threading.Event] = None) -> int:
        """Sends each new complete piece; `stop` set: no further piece is begun (the one in flight is finished)."""
        if not self.path.exists():
            return 0
        sent = 0
        if self.kind in STEP_FORMATS:
            pieces = [lambda u=unit, w=where: self._send_step(u, w) for unit, where in self._complete_steps() if unit not in self.sent_steps]
        else:
            pieces = [lambda f=f: self._send_lines(f) for f in self._line_files()]
        for piece in pieces:
            if stop is not None and stop.is_set():
                break
            sent += piece()
        return sent

    # -- step formats: one file or folder per step, sent whole once complete --

    def _complete_steps(self) -> List[Tuple[str, Path]]:
        """(name, path) of each complete step in step order; the name is what the state records."""
        if self.kind == "prime-rl":
            root = self.path / "token_exports" if (self.path / "token_exports").is_dir() else self.path
            found = [(int(m.group(1)), d) for d in root.iterdir() if (m := _PRIME_STEP.match(d.name)) and d.is_dir()]
            return [(d.name, d) for _, d in sorted(found) if (d / "STABLE").exists()]
        if self.kind == "trl":
            root = self._trl_root()
            found = sorted((int(m.group(1)), f) for f in root.iterdir() if (m := _TRL_FILE.match(f.name)))
            return [(f.name, f) for _, f in found if _parquet_complete(f)]
        found = sorted((int(f.stem), f) for f in self.path.glob("*.jsonl") if f.stem.isdigit())
        now = time.time()
        out = []
        for i, (_, f) in enumerate(found):
            # verl writes a step's file in one go, then the next step's: a later file means this one is whole
            if i + 1 < len(found) or (_ends_with_newline(f) and now - f.stat().st_mtime >= self.quiet):
                out.append((f.name, f))
        return out

    def _trl_root(self) -> Path:
        return self.path / "completions" if (self.path / "completions").is_dir() else self.path

    def _identity(self) -> Tuple[str, str]:
        """(source key, run name) as `turnlens import FORMAT DIR` gives them: the same run, found again."""
        p = self.path
        if self.kind == "prime-rl":
            return str(p), (p.parent.name if p.name == "token_exports" else p.name)
        if self.kind == "trl":
            root = self._trl_root()
            return str(root), (root.parent.name if root.name == "completions" else root.name) or "trl"
        return str(p), p.name

    def _send_step(self, unit: str, where: Path) -> int:
        src = self._read(where, unit)
        rep = None
        if src is not None:
            src.key, src.name = self._identity()
            rep = self._send(src)
        self.sent_steps.add(unit)
        self._save()
        self._report(rep, unit)  # after the save: a piece reported is a piece recorded
        return 1

    # -- line formats: each complete line, in pieces --

    def _line_files(self) -> List[Path]:
        if self.path.is_file():
            return [self.path]
        return sorted(self.path.glob("*.jsonl") if self.kind == "jsonl" else self.path.rglob("*.jsonl"))

    def _send_lines(self, f: Path) -> int:
        st = self.state["files"].setdefault(str(f), {"offset": 0, "lines": 0, "head": None})
        size = f.stat().st_size
        if size < st["offset"]:  # the file was written anew: read it again (what was stored is found again by batch id)
            st.update(offset=0, lines=0, head=None)
        if size == st["offset"]:
            return 0
        with open(f, "rb") as fh:
            fh.seek(st["offset"])
            # a piece is at most one longest line: a backlog of gigabytes goes in pieces, never read whole
            data = fh.read(min(size - st["offset"], MAX_LINE + 1))
            end = data.rfind(b"\n") + 1
            if end == 0 and len(data) > MAX_LINE:  # a line no request could carry: skip to its end and say so
                while data and b"\n" not in data:
                    end += len(data)
                    data = fh.read(1 << 20)
                if not data:
                    return 0  # still being written
                end += data.index(b"\n") + 1
                st["offset"] += end
                st["lines"] += 1
                self._save()
                self.log(f"{f.name}:{st['lines']}: rejected: a line of {end} bytes, longer than the {MAX_LINE} a line may hold")
                return 0
        if end == 0:  # no complete line yet
            return 0
        data = data[:end]
        first_line = st["lines"] + 1
        lines = data.decode("utf-8", "replace").splitlines()
        if self.kind == "jsonl" and st["offset"] == 0:
            st["head"] = _run_line(lines[0]) if lines else None
        head = st["head"] if (self.kind == "jsonl" and st["offset"] > 0) else None
        tmp = Path(tempfile.mkdtemp(prefix="turnlens-watch-"))
        try:
            # the reader names the run and its config from the file's name and folder: give the piece the same ones
            piece = tmp / f.parent.name / f.name
            piece.parent.mkdir()
            piece.write_bytes((head.encode() + b"\n" if head else b"") + data)
            src = self._read(piece, f"{f.name}:{first_line}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if src is None:
            st["offset"] += end
            st["lines"] += len(lines)
            self._save()
            return 0
        shift = first_line - 1 - (1 if head else 0)
        src.rejected = [(_renumber(w, f.name, shift), why) for w, why in src.rejected]
        src.replaced = [(_renumber(w, f.name, shift), why) for w, why in src.replaced]
        src.key = str(f)
        finished = self.kind == "jsonl" and any(_is_finish(x) for x in lines)
        label = f"{f.name}:{first_line}-{first_line + len(lines) - 1}"
        rep = self._send(src)
        run_id = rep.run_id if rep else self.state.get("runs", {}).get(src.key)
        if finished and run_id:
            _post_tolerant(self.transport, f"/api/v1/runs/{run_id}/finish", finish_body(src), spool.load_write_key(run_id))
        st["offset"] += end
        st["lines"] += len(lines)
        self._save()
        self._report(rep, label)
        if finished and run_id:
            self.log(f"{f.name}: the run's finish line: run {run_id} marked {src.status}")
        return 1

    def _read(self, where: Path, label: str) -> Optional[Source]:
        """The reader's Source of one piece; a piece it cannot read at all is reported and skipped, not retried."""
        try:
            if self.kind == "trl":  # a batch TRL wrote again at a later logging step is reported, as the import does
                seen = {k: tuple(v) for k, v in self.state.setdefault("trlBatches", {}).items()}
                [src] = trl.read(str(where), env_id=self.env_id, seen=seen)
                self.state["trlBatches"] = {k: list(v) for k, v in seen.items()}
                return src
            [src] = KINDS[self.kind](str(where), env_id=self.env_id)
            return src
        except Exception as e:  # e.g. a binary file where JSON lines belong: say so once and go on
            self.log(f"{label}: skipped, not readable as {self.kind} ({type(e).__name__}: {e})")
            return None

    def _send(self, src: Source) -> Optional[ImportReport]:
        if not src.records and not src.rejected:  # e.g. a generic file's run line alone: nothing to store yet
            return None
        rep = _import_source(self.transport, self.kind, src, self.project, self.name, self.env_id, finish=False)
        if rep.run_id:
            self.state.setdefault("runs", {})[src.key] = rep.run_id
        return rep

    def _report(self, rep: Optional[ImportReport], label: str) -> None:
        if rep is None:
            return
        run = f"run {rep.run_id}{' (new)' if rep.created else ''}" if rep.run_id else "no run"
        self.log(f"{label}: {run}: {rep.imported} row(s) sent, {rep.already} already present, {len(rep.rejected)} rejected")
        for where, why in rep.rejected[:10]:
            self.log(f"  rejected {where}: {why}")
        if rep.kept:
            self.log(f"  what the server refused is kept in {rep.kept}: `turnlens sync {rep.kept}` sends it again")

    def run(self, interval: float = 0.5, once: bool = False, stop: Optional[threading.Event] = None) -> int:
        """Polls until `stop` is set (after the piece in flight, so it is not sent again) or once; returns pieces sent."""
        stop = stop or threading.Event()
        sent = 0
        while not stop.is_set():
            sent += self.poll(stop)
            if once:
                break
            stop.wait(interval)
        return sent


def _parquet_complete(f: Path) -> bool:
    """A parquet file ends with its footer and the magic PAR1: until then it is still being written."""
    try:
        with open(f, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() < 12:
                return False
            fh.seek(-4, os.SEEK_END)
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def _ends_with_newline(f: Path) -> bool:
    try:
        with open(f, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    except OSError:
        return False


def _typed(line: str) -> Optional[str]:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row.get("type") if isinstance(row, dict) else None


def _run_line(line: str) -> Optional[str]:
    return line if _typed(line) == "run" else None


def _is_finish(line: str) -> bool:
    return '"finish"' in line and _typed(line) == "finish"


def _renumber(where: str, name: str, shift: int) -> str:
    """`name:N` of a piece as the line number in the whole file."""
    m = re.match(rf"^{re.escape(name)}:(\d+)(.*)$", where, re.S)
    return f"{name}:{int(m.group(1)) + shift}{m.group(2)}" if m else where
