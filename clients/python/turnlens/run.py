"""A run: `log` and `log_rollouts` return at once; a background sender delivers.

    log()/log_rollouts() ──> bounded queue ──> sender thread ──> server
                      └─ full: spill-*.jsonl ─┘          └─ gave up: records.jsonl (spool)

The sender merges consecutive metric points into batches, gives each batch a batch id once,
and retries it with the same id (network errors, 5xx, 429 with Retry-After) until it is stored,
so the server keeps one copy however many times it arrived. When the queue is full the calls
append to a spill file instead of blocking the training loop; the sender reads the spill back
in order once the queue is empty. What is still unsent when `finish()` times out (or in
offline mode, everything) is written to the spool for `turnlens sync`.
"""

import atexit
import collections
import os
import secrets
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import shapes, spool
from .contract import CONTRACT
from .transport import ApiError, Transport, Unavailable, encode, encode_built

_STOP = ("stop",)
# Most steps (and, reached first, about most turns) sent in one steps/batch request.
MAX_BATCH_STEPS = 8
MAX_BATCH_TURNS = 16_384
# A step whose request body is larger than this goes in parts, split by groups, to /steps/parts
# (the server's default body limit is 64 MiB; a full-size ALFWorld step with tokens is ~50 MB).
PART_BYTES = 24 * 2**20
# A metric batch grows past batch_values, up to this many times it, only when that many values are
# already queued (a training loop logging faster than the server stores): the server's fixed cost
# per request (~4 ms) is then paid less often, and a slow loop still gets its points sent at once.
DEEP_BATCH_FACTOR = 5


def _warn(msg: str) -> None:
    print(f"turnlens: {msg}", file=sys.stderr, flush=True)


class Run:
    """Use `turnlens.init(...)`; see its docstring for the arguments."""

    def __init__(self, project: str = "default", name: Optional[str] = None, config: Optional[Mapping[str, Any]] = None,
                 url: Optional[str] = None, token: Optional[str] = None, resume: Optional[str] = None,
                 mode: Optional[str] = None, env_id: str = "external", estimator: Optional[str] = None,
                 tags: Optional[List[str]] = None, notes: str = "", seed: int = 0, write_key: Optional[str] = None,
                 spool_dir: Optional[str] = None, max_queue: int = 200_000, batch_values: int = 20_000,
                 flush_interval: float = 0.2, init_timeout: float = 10.0, finish_timeout: float = 120.0):
        self.mode = (mode or os.environ.get("TURNLENS_MODE") or "online").lower()
        launched = os.environ.get("TURNLENS_RUN_ID")
        if launched and resume is None:
            # started by a TurnLens worker (a trainer job): write into the run it launched, with its key
            resume, write_key = launched, write_key or os.environ.get("TURNLENS_WRITE_KEY")
            project = os.environ.get("TURNLENS_PROJECT") or project
        if self.mode not in ("online", "offline"):
            raise ValueError(f"mode: expected 'online' or 'offline', got {self.mode!r}")
        self.env_id = env_id
        self.estimator = estimator
        self.batch_values = batch_values
        self.flush_interval = flush_interval
        self.finish_timeout = finish_timeout
        self._transport = Transport(url, token)
        self.url = self._transport.url
        self.id: Optional[str] = resume
        self.write_key: Optional[str] = write_key
        self.spool_dir = Path(spool_dir) if spool_dir else spool.new_spool_dir()
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        self._session = secrets.token_hex(6)  # batch ids: <session>:<n>, unique per Run object
        self._seq = 0
        self._batch_ids = True  # switched off if the server predates client batch ids
        self._step_batches = True  # switched off if the server predates POST /steps/batch
        # The calls not yet taken by the sender. A deque and an event, not queue.Queue: put and get
        # there take a condition lock each, ~40% of log()'s cost (cProfile); deque appends are atomic.
        self._queue: "collections.deque[tuple]" = collections.deque()
        self._max_queue = max_queue
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._spilling = False
        self._spill_n = 0
        # calls made and calls the sender has handled (stored, refused or spooled): what flush() waits on
        self._puts = 0
        self._handled = 0
        self._handled_cv = threading.Condition()
        self._deadline: Optional[float] = None
        self._finished = False
        self._error: Optional[BaseException] = None
        self.sent = {"points": 0, "turns": 0, "requests": 0, "retried_batches": 0}
        self.rejected: List[str] = []
        self.dropped: Dict[str, int] = {}  # run.log values dropped in the calling line, by reason
        self._rollouts_checked = False  # the first log_rollouts call is converted in the loop
        self._held = False  # the server refused a record: the finish waits behind it in the spool

        run_name = name or f"run-{time.strftime('%Y%m%d-%H%M%S')}"
        self._create_body = {"project": project, "name": run_name, "config": dict(config or {}), "seed": int(seed),
                             "tags": list(tags or []), "notes": notes, "envId": env_id}
        if estimator:
            self._create_body["estimator"] = estimator
        self._save_state()

        if self.mode == "online":
            try:
                if resume:
                    self._resume(time.monotonic() + init_timeout)
                else:
                    self._create(time.monotonic() + init_timeout)
            except Unavailable as e:
                _warn(f"{e}; logging continues and is sent when the server answers (spool: {self.spool_dir})")
        elif resume:
            self.write_key = self.write_key or spool.load_write_key(resume)
            self._save_state()
        self._thread = threading.Thread(target=self._sender, name="turnlens-sender", daemon=True)
        self._thread.start()
        _live.add(self)

    # ---------------------------------------------------------------- public API

    def log(self, values: Mapping[str, Any], step: int, wall_time: Optional[float] = None) -> None:
        """Metrics at a training step, e.g. run.log({"train/reward": 0.3}, step=10). Never blocks and
        never raises: NaN and ±Inf are stored as such (charts show a gap, summaries skip them); a
        value or key the server would refuse is dropped alone, with one warning per key and reason."""
        try:
            point = shapes.metric_point(values, step, wall_time if wall_time is not None else time.time(), on_bad=self._warn_bad)
        except shapes.ShapeError as e:  # nothing loggable in the call (bad step, no dict, every value bad)
            self._warn_bad("", str(e))
            return
        self._put(("m", point))

    def _warn_bad(self, key: str, why: str) -> None:
        """Warns once per (key, reason) and counts what was dropped (`run.dropped`)."""
        self.dropped[why] = self.dropped.get(why, 0) + 1
        if self.dropped[why] == 1 and len(self.dropped) <= 100:
            _warn(f"log: dropped {why}")

    def log_rollouts(self, step: int, groups: Any, estimator: Optional[str] = None,
                     params: Optional[Mapping[str, Any]] = None, diagnostics: Optional[Mapping[str, Any]] = None) -> None:
        """One training step's rollouts: {uid: [trajectory]} where a trajectory is a list of turns
        (dicts with observation, action, reward, and optionally anchor, advantage, valid, done, agent,
        tokenCount, logprob, entropy; any other key is kept in the turn's info) or a dict
        {turns, reward?, success?, truncated?}. Sent in the background.

        The run's first call is checked here, so a shape bug raises at once naming the field (e.g.
        groups[g0][1].turns[2].reward: required). Later calls are converted in the sender thread: a
        full-size step (6,400 turns with tokens) costs the loop microseconds instead of a second. A
        bad field found there is warned about, naming it, and the step kept in the spool
        (refused.jsonl) instead of sent. The lists and arrays passed are read until then: pass
        fresh ones each step (as the integrations do), not buffers the loop overwrites."""
        est = estimator or self.estimator
        if not self._rollouts_checked:
            body = shapes.step_body(step, groups, self.env_id, est, params, diagnostics)
            self._rollouts_checked = True
            self._put(("s", body))
            return
        if not isinstance(groups, (Mapping, list, tuple)) or not groups:
            raise shapes.ShapeError("groups: expected {uid: [trajectories]} or a list of {uid, trajectories}")
        self._put(("r", (shapes.to_step(step), groups, est, params, diagnostics)))

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Waits until every call made before this one is handled: stored by the server (and so
        readable), refused (kept in the spool with its reason) or spooled because the server cannot
        be reached; at most `timeout` seconds (None: no limit). True when all were; never raises.
        `log_rollouts(...)` then `flush()` takes as long as it takes a step to become readable."""
        with self._lock:
            target = self._puts
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._handled_cv:
            while self._handled < target and self._error is None and self._thread.is_alive():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._handled_cv.wait(0.5 if left is None else min(left, 0.5))  # and look at the sender again
            return self._handled >= target

    def _note_handled(self, n: int) -> None:
        with self._handled_cv:
            self._handled += n
            self._handled_cv.notify_all()

    def finish(self, status: str = "succeeded", error: Optional[str] = None, timeout: Optional[float] = None) -> None:
        """Delivers what is queued (up to `timeout` seconds, default finish_timeout), marks the run finished,
        and spools whatever could not be sent. Safe to call twice."""
        if self._finished:
            return
        if status not in CONTRACT["finishStatuses"]:
            raise ValueError(f"status: expected {', '.join(CONTRACT['finishStatuses'])}, got {status!r}")
        body: Dict[str, Any] = {"status": status}
        if error:
            body["error"] = str(error)[:8000]
        self._put(("f", body))  # behind every earlier call, spilled ones included
        self._finished = True
        self._queue.append(_STOP)
        self._ready.set()
        self._deadline = time.monotonic() + (self.finish_timeout if timeout is None else timeout)
        self._thread.join()
        self._transport.close()
        _live.discard(self)
        if self.pending_in_spool():
            _warn(f"{self.pending_in_spool()} request(s) not sent; upload them with: turnlens sync {self.spool_dir}")
        elif self.mode == "online":
            self._remove_spool()

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.finish()
        else:
            self.finish("failed", f"{exc_type.__name__}: {exc}")

    def pending_in_spool(self) -> int:
        """Records in the spool not yet stored: unsent ones and the ones the server refused."""
        done = int((self.spool_dir / "synced").read_text()) if (self.spool_dir / "synced").exists() else 0
        unsent = max(0, sum(1 for _ in spool.read_lines(self.spool_dir / "records.jsonl")) - done)
        return unsent + sum(1 for _ in spool.read_lines(self.spool_dir / "refused.jsonl"))

    # ---------------------------------------------------------------- run creation / resume

    def _save_state(self) -> None:
        spool.write_json_atomic(self.spool_dir / "run.json", {"url": self.url, "create": self._create_body,
                                                               "runId": self.id, "writeKey": self.write_key})

    def _create(self, deadline: Optional[float]) -> None:
        _, run = self._transport.request("POST", "/api/v1/runs/import", self._create_body, deadline=deadline,
                                         should_stop=self._stopping)
        self.id = run["id"]
        self.write_key = run.get("writeKey")  # absent on servers without write keys: send none
        if self.write_key:
            spool.save_write_key(self.id, self.write_key)
        self._save_state()

    def _resume(self, deadline: Optional[float]) -> None:
        self.write_key = self.write_key or spool.load_write_key(self.id)
        self._save_state()
        try:
            self._transport.request("POST", f"/api/v1/runs/{self.id}/resume", {}, write_key=self.write_key,
                                    deadline=deadline, should_stop=self._stopping)
        except ApiError as e:
            # 409 when the run is still running (nothing to reopen); 404 on servers without resume.
            if e.status not in (404, 409):
                raise
            _, run = self._transport.request("GET", f"/api/v1/runs/{self.id}", deadline=deadline)
            if run.get("status") != "running":
                raise

    def _stopping(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    # ---------------------------------------------------------------- producer side

    def _put(self, item: tuple) -> None:
        if self._finished:
            raise RuntimeError("run is finished: start a new one with turnlens.init() (or resume=run_id)")
        with self._lock:
            self._puts += 1
            if not self._spilling:
                if len(self._queue) < self._max_queue:
                    self._queue.append(item)
                    if not self._ready.is_set():
                        self._ready.set()
                    return
                self._spilling = True
            if item[0] == "r":  # a spilled call is stored as JSON: converted now
                item = self._convert(item)
                if item is None:
                    self._note_handled(1)  # refused (kept in refused.jsonl)
                    return
            spool.append_lines(self.spool_dir / f"spill-{self._spill_n:06d}.jsonl", [{"item": list(item)}], fsync=False)

    # ---------------------------------------------------------------- sender thread

    def _next_batch_id(self) -> str:
        self._seq += 1
        return f"{self._session}:{self._seq}"

    def _convert(self, item: tuple) -> Optional[tuple]:
        """A deferred log_rollouts call as its step body ("s", body); a call with a bad field is
        warned about (naming it) and kept in refused.jsonl as far as it converts, never sent."""
        step, groups, est, params, diagnostics = item[1]
        try:
            return ("s", shapes.step_body(step, groups, self.env_id, est, params, diagnostics))
        except (shapes.ShapeError, TypeError, ValueError) as e:
            reason = f"log_rollouts(step={step}): {e}"
            self.rejected.append(reason)
            _warn(f"{reason}; the step is kept in {self.spool_dir / 'refused.jsonl'}, not sent")
            body = {"step": step, "groups": shapes._jsonable(groups), "estimator": est,
                    "params": shapes._jsonable(params), "diagnostics": shapes._jsonable(diagnostics)}
            spool.append_lines(self.spool_dir / "refused.jsonl", [{"kind": "steps", "batchId": None, "body": body, "refused": reason}])
            return None

    def _records(self, items: List[tuple]) -> List[Dict[str, Any]]:
        """Consecutive metric points merged into columnar batches, order kept: a run of up to
        batch_values values is one batch; a longer run (a deep queue) is cut into near-equal batches
        of at most DEEP_BATCH_FACTOR * batch_values values."""
        if any(it[0] == "r" for it in items):
            items = [c for c in (self._convert(it) if it[0] == "r" else it for it in items) if c is not None]
        out: List[Dict[str, Any]] = []
        i = 0
        while i < len(items):
            if items[i][0] != "m":
                kind = "steps" if items[i][0] == "s" else "finish"
                out.append({"kind": kind, "batchId": self._next_batch_id() if kind == "steps" else None, "body": items[i][1]})
                i += 1
                continue
            j, total = i, 0
            while j < len(items) and items[j][0] == "m":
                total += len(items[j][1]["values"])
                j += 1
            if total <= self.batch_values:
                size = total
            else:
                n_batches = -(-total // (self.batch_values * DEEP_BATCH_FACTOR))  # ceil
                size = -(-total // n_batches)
            points: List[Dict[str, Any]] = []
            n = 0
            for k in range(i, j + 1):  # k == j: past the run, closes the last batch
                v = len(items[k][1]["values"]) if k < j else size + 1
                if points and n + v > size:
                    out.append({"kind": "metrics", "batchId": self._next_batch_id(), "body": shapes.columns_body(points)})
                    points, n = [], 0
                if k < j:
                    points.append(items[k][1])
                    n += v
            i = j
        return out

    def _take(self) -> Tuple[List[tuple], bool]:
        """The queued calls, oldest first, up to four deep batches' worth of values (waiting up to
        flush_interval for the first), and whether finish()'s stop marker was reached."""
        q = self._queue
        if not q:
            self._ready.clear()
            if not q:  # looked at again after clearing: a call appended in between has set it again
                self._ready.wait(self.flush_interval)
        items: List[tuple] = []
        limit = self.batch_values * DEEP_BATCH_FACTOR * 4
        n = 0
        while q and n < limit:
            it = q.popleft()
            if it is _STOP:
                return items, True
            items.append(it)
            n += len(it[1]["values"]) if it[0] == "m" else 1
        return items, False

    def _sender(self) -> None:
        stop = False
        try:
            while not stop:
                items, stop = self._take()
                self._deliver_all(self._records(items))
                self._note_handled(len(items))
                if self._spilling and (stop or not items):
                    self._drain_spill()
        except BaseException as e:  # keep what is left; never lose it silently
            self._error = e
            _warn(f"sender stopped: {type(e).__name__}: {e}")
            rest = []
            while self._queue:
                it = self._queue.popleft()
                if it is not _STOP:
                    rest.append(it)
            spool.append_lines(self.spool_dir / "records.jsonl", self._records(rest))

    def _drain_spill(self) -> None:
        """Spilled calls, oldest file first; spilling stops once the files are read and the queue is empty."""
        while True:
            with self._lock:
                path = self.spool_dir / f"spill-{self._spill_n:06d}.jsonl"
                if not path.exists():
                    # nothing spilled since the last file; only finish's stop marker can be queued now
                    if not self._queue:
                        self._spilling = False
                    return
                self._spill_n += 1  # producers write to the next file from now on
            items = [tuple(r["item"]) for r in spool.read_lines(path)]
            self._deliver_all(self._records(items))
            path.unlink(missing_ok=True)
            self._note_handled(len(items))

    def _units(self, records: List[Dict[str, Any]]) -> List[Tuple[Dict[str, Any], List[Dict[str, Any]]]]:
        """(what to send, the records it carries): consecutive steps already queued go as one
        steps/batch request (one round trip and one commit for several steps; a lone step is sent as is).
        A batch's step numbers increase (the server refuses one out of order or repeated): a step
        logged again or out of order starts a new unit."""
        units: List[Tuple[Dict[str, Any], List[Dict[str, Any]]]] = []
        i = 0
        while i < len(records):
            j, turns = i + 1, 0
            if records[i]["kind"] == "steps" and self._step_batches:
                turns = shapes.count_turns(records[i]["body"])
                while (j < len(records) and records[j]["kind"] == "steps" and j - i < MAX_BATCH_STEPS
                       and turns < MAX_BATCH_TURNS and records[j]["body"]["step"] > records[j - 1]["body"]["step"]):
                    turns += shapes.count_turns(records[j]["body"])
                    j += 1
            if j - i == 1:
                units.append((records[i], records[i:j]))
            else:
                units.append(({"kind": "steps/batch", "batchId": None, "turns": turns, "body": {"steps": [
                    _request_body(r, self._batch_ids) for r in records[i:j]]}}, records[i:j]))
            i = j
        return units

    def _deliver_all(self, records: List[Dict[str, Any]]) -> None:
        units = self._units(records)
        for i, (unit, parts) in enumerate(units):
            if self.mode == "offline" or self._stopping():
                self._to_spool([r for _, ps in units[i:] for r in ps])
                return
            try:
                # the next body is encoded while the server stores this one
                following = units[i + 1][0] if i + 1 < len(units) else None
                if unit["kind"] == "steps/batch":
                    self._deliver_batch(unit, parts, following)
                else:
                    self._deliver(unit, following)
            except Unavailable as e:
                _warn(f"{e}; spooling the rest to {self.spool_dir}")
                self._to_spool([r for _, ps in units[i:] for r in ps])
                return

    def _deliver_batch(self, unit: Dict[str, Any], parts: List[Dict[str, Any]], following: Optional[Dict[str, Any]]) -> None:
        if self.id is None:
            self._create(None)
        try:
            send_record(self._transport, self.id, self.write_key, unit, self._stopping, self, following)
        except ApiError as e:
            # A server without the route (404/405) gets single steps from now on; any other refusal
            # (a step stored with other content, a bad field) is sorted out step by step, each with its own answer.
            if e.status in (404, 405):
                self._step_batches = False
            for k, rec in enumerate(parts):
                self._deliver(rec, parts[k + 1] if k + 1 < len(parts) else None)

    def _to_spool(self, records: List[Dict[str, Any]]) -> None:
        spool.append_lines(self.spool_dir / "records.jsonl", records)
        if self._spilling:  # spilled calls behind them go too, in order
            with self._lock:
                while True:
                    path = self.spool_dir / f"spill-{self._spill_n:06d}.jsonl"
                    if not path.exists():
                        break
                    self._spill_n += 1
                    items = [tuple(r["item"]) for r in spool.read_lines(path)]
                    spool.append_lines(self.spool_dir / "records.jsonl", self._records(items))
                    path.unlink()
                    self._note_handled(len(items))

    def _deliver(self, rec: Dict[str, Any], following: Optional[Dict[str, Any]] = None) -> None:
        if self.id is None:
            self._create(None)
        if rec["kind"] == "finish" and self._held:
            # Not everything arrived: the run stays open on the server, its finish waits behind the refused records.
            spool.append_lines(self.spool_dir / "refused.jsonl", [rec])
            return
        outcome = send_record(self._transport, self.id, self.write_key, rec, self._stopping, self, following)
        if outcome is not None:
            self.rejected.append(outcome)
            self._held = True
            spool.append_lines(self.spool_dir / "refused.jsonl", [dict(rec, refused=outcome)])
            _warn(f"server refused {rec['kind']} (batch {rec.get('batchId')}): {outcome}; kept in {self.spool_dir} "
                  f"for `turnlens sync` once the cause is removed")

    def _remove_spool(self) -> None:
        for p in self.spool_dir.iterdir():
            p.unlink()
        self.spool_dir.rmdir()


def _request_body(rec: Dict[str, Any], use_ids: bool) -> Dict[str, Any]:
    body = dict(rec["body"])
    if rec.get("batchId") and use_ids:
        body["batchId"] = rec["batchId"]
    return body


# Bodies encoded ahead (the record that follows the one in flight): id(record) -> (record, with batch id, bytes).
_encoded: Dict[int, Tuple[Dict[str, Any], bool, bytes]] = {}


def send_record(transport: Transport, run_id: str, write_key: Optional[str], rec: Dict[str, Any],
                should_stop=None, stats: Optional[Run] = None, following: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """Sends one spool record with retries. Returns None when stored (or stored before), or the
    server's reason when it refused the record (4xx); raises Unavailable when it cannot be reached.
    `following`, the record to be sent next, is encoded while this one is in flight."""
    kind = rec["kind"]
    use_ids = stats is None or stats._batch_ids
    body = _request_body(rec, use_ids)
    ahead = _encoded.pop(id(rec), None)
    data = ahead[2] if ahead is not None and ahead[0] is rec and ahead[1] == use_ids else body

    def encode_following() -> None:
        if following is None:
            return
        _encoded.clear()
        try:
            enc = encode_built if following["kind"] in ("steps", "steps/batch") else encode
            _encoded[id(following)] = (following, use_ids, enc(_request_body(following, use_ids)))
        except ValueError:
            pass  # encoded again when it is sent, which names the problem

    path = f"/api/v1/runs/{run_id}/{kind}"
    if kind in ("steps", "steps/batch"):
        if not isinstance(data, bytes):
            data = encode_built(body)
        if len(data) > PART_BYTES:
            if kind == "steps/batch":  # the caller sends the steps one by one, each in parts if need be
                raise ApiError(413, f"{len(data)} bytes is more than one request carries here ({PART_BYTES})")
            return _send_in_parts(transport, run_id, write_key, body, should_stop, stats)
    try:
        try:
            status, _ = transport.request("POST", path, data, write_key=write_key, should_stop=should_stop, while_waiting=encode_following)
        except ApiError as e:
            issues = [i for i in e.issues if isinstance(i, dict)]
            names = [f"{i.get('path', '')} {i.get('message', '')}" for i in issues]
            if e.status == 400 and kind == "metrics" and "steps" in body and any(i.get("path") == "body.points" for i in issues):
                # A server that predates columnar batches asks for `points`: the same batch in that shape.
                body = shapes.columns_to_points(body)
                status, _ = transport.request("POST", path, body, write_key=write_key, should_stop=should_stop)
            # A server that predates client batch ids rejects the field; send without it from now on.
            elif e.status == 400 and "batchId" in body and any("batchId" in n for n in names):
                if stats is not None:
                    stats._batch_ids = False
                body.pop("batchId")
                status, _ = transport.request("POST", path, body, write_key=write_key, should_stop=should_stop)
            else:
                raise
    except ApiError as e:
        if kind == "finish" and e.status == 409:
            return None  # already finished: the finish of an earlier attempt arrived
        if kind == "steps/batch":
            raise  # the caller sends the steps one by one
        return str(e)
    if stats is not None:
        stats.sent["requests"] += 1
        if status == 200 and kind != "finish":
            stats.sent["retried_batches"] += 1  # the server had it already (a retry after a lost answer)
        if kind == "metrics":
            stats.sent["points"] += shapes.count_points(body)
        elif kind == "steps":
            stats.sent["turns"] += shapes.count_turns(body)
        elif kind == "steps/batch":
            stats.sent["turns"] += rec["turns"]
    return None


def step_parts(body: Dict[str, Any], limit: int = PART_BYTES) -> List[bytes]:
    """A step body as /steps/parts request bodies: its groups packed in order into parts of at most
    about `limit` bytes, each part carrying the step's estimator, params and diagnostics. Each group
    is encoded once; a part's bytes are put together from those encodings, not encoded again."""
    head = {k: v for k, v in body.items() if k not in ("groups", "batchId")}
    room = limit - len(encode(head)) - 64  # the head, and the part's index fields
    chunks: List[List[bytes]] = [[]]
    size = 0
    for g in body["groups"]:
        data = encode_built(g)
        if chunks[-1] and size + len(data) + 1 > room:
            chunks.append([])
            size = 0
        chunks[-1].append(data)
        size += len(data) + 1
    n = len(chunks)
    # `{...head, "part": i, "parts": n, "groups": []}` with its closing `[]}` replaced by the groups
    return [encode(dict(head, part=i, parts=n, groups=[]))[:-3] + b"[" + b",".join(c) + b"]}" for i, c in enumerate(chunks)]


def _send_in_parts(transport: Transport, run_id: str, write_key: Optional[str], body: Dict[str, Any],
                   should_stop=None, stats: Optional[Run] = None) -> Optional[str]:
    """Sends a large step as parts; the server stores it whole when the last arrives. Each part is
    idempotent, so a retry (or a later sync) sends them all again. Returns None or the refusal."""
    parts = step_parts(body)
    for i, data in enumerate(parts):
        try:
            transport.request("POST", f"/api/v1/runs/{run_id}/steps/parts", data, write_key=write_key, should_stop=should_stop)
        except ApiError as e:
            return f"part {i} of {len(parts)}: {e}"
    if stats is not None:
        stats.sent["requests"] += len(parts)
        stats.sent["turns"] += shapes.count_turns(body)
    return None


# Runs not finished when the interpreter exits are finished as "failed" after a short flush,
# the rest spooled, so a crash in the training script loses nothing already logged.
_live: "weakref.WeakSet[Run]" = weakref.WeakSet()


@atexit.register
def _finish_live_runs() -> None:
    for run in list(_live):
        try:
            run.finish("failed", "the process exited without run.finish()", timeout=10)
        except Exception as e:  # pragma: no cover - best effort at exit
            _warn(f"at exit: {e}")
