"""HTTP to a TurnLens server: one keep-alive connection, JSON in and out, retry with backoff.

Retried: connection errors and timeouts, 5xx, and 429 (waiting the server's Retry-After).
Not retried: other 4xx, which say the request itself is wrong (raised as ApiError with the
server's `{error, issues}`).
"""

import http.client
import json
import os
import random
import socket
import time
import urllib.parse
from typing import Any, Callable, Dict, Optional, Tuple

DEFAULT_URL = "http://127.0.0.1:3000"
# Reopen a connection idle this long instead of sending on it (the server closes idle ones after 65 s).
IDLE_RECONNECT_S = 50.0
WRITE_KEY_HEADER = "X-TurnLens-Write-Key"


class ApiError(Exception):
    """The server refused a request (4xx other than 429); `status`, `error` and `issues` are the server's."""

    def __init__(self, status: int, error: str, issues: Optional[list] = None, method: str = "", path: str = ""):
        self.status, self.error, self.issues = status, error, issues or []
        detail = "; ".join(f"{i.get('path')}: {i.get('message')}" for i in self.issues if isinstance(i, dict))
        super().__init__(f"{method} {path} -> {status}: {error}" + (f" ({detail})" if detail else ""))


class Unavailable(Exception):
    """The server could not be reached or kept failing (network error, 5xx, 429) until the deadline."""


def _retryable(status: int) -> bool:
    # 408: the server stopped waiting for the body (a stalled or slow link); the same request again
    # is safe, since every write is idempotent by its batch id or step
    return status in (408, 429) or status >= 500


try:  # optional (pip install "turnlens[fast]"; Trackio and Gradio install it too)
    import orjson as _orjson
except ImportError:  # pragma: no cover - the standard library's json instead
    _orjson = None


def encode(body: Any) -> bytes:
    """A request body as compact JSON (NaN and infinities refused: the server rejects them anyway)."""
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


def encode_built(body: Any) -> bytes:
    """A rollout step body the client built (turnlens.shapes: every float finite, every key text) as
    the same JSON values encode gives, with orjson where it is installed: 6.8 MB of ALFWorld step in
    ~6 ms instead of ~35. orjson writes NaN as null, so only such bodies come here; one it cannot
    write (an integer past 64 bits, a lone surrogate) goes to encode, which writes or names it."""
    if _orjson is not None:
        try:
            return _orjson.dumps(body)
        except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
            pass
    return encode(body)


class Transport:
    """Talks to one server. Not thread-safe: each thread that sends owns its own Transport."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0):
        self.url = (url or os.environ.get("TURNLENS_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("TURNLENS_API_TOKEN")
        self.timeout = timeout
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url: expected http(s)://host:port, got {self.url!r}")
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._base = parts.path.rstrip("/")
        self._conn: Optional[http.client.HTTPConnection] = None
        self._last_used = 0.0

    def _connection(self) -> http.client.HTTPConnection:
        # A connection idle longer than the server keeps one open (scripts/web-server.mjs: 65 s) is
        # closed at its end: the first request after a long training step would hit a dead socket.
        if self._conn is not None and time.monotonic() - self._last_used > IDLE_RECONNECT_S:
            self.close()
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request_once(self, method: str, path: str, body: Any = None, write_key: Optional[str] = None,
                     while_waiting: Optional[Callable[[], None]] = None) -> Tuple[int, Dict[str, str], Any]:
        """One attempt. Returns (status, headers, parsed JSON or text); raises OSError/HTTPException on network failure.
        `while_waiting` runs once the request is sent, while the server works on it (the sender encodes its next body)."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else encode(body)
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if write_key:
            headers[WRITE_KEY_HEADER] = write_key
        conn = self._connection()
        try:
            conn.request(method, self._base + path, body=data, headers=headers)
            if while_waiting is not None:
                while_waiting()
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            self.close()  # the next attempt opens a fresh connection
            raise
        self._last_used = time.monotonic()
        if resp.getheader("connection", "").lower() == "close":
            self.close()
        text = raw.decode("utf-8", "replace")
        try:
            payload: Any = json.loads(text) if text else None
        except ValueError:
            payload = text
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload

    def request(self, method: str, path: str, body: Any = None, write_key: Optional[str] = None,
                deadline: Optional[float] = None, should_stop: Optional[Callable[[], bool]] = None,
                base_delay: float = 0.2, max_delay: float = 8.0, while_waiting: Optional[Callable[[], None]] = None) -> Tuple[int, Any]:
        """Retries until success, a non-retryable answer (ApiError), or `deadline` (time.monotonic()) passes (Unavailable)."""
        attempt = 0
        while True:
            why = ""
            wait = min(max_delay, base_delay * (2**attempt)) * (0.5 + random.random() / 2)
            try:
                status, headers, payload = self.request_once(method, path, body, write_key, while_waiting)
                while_waiting = None  # once is enough
                if status < 400:
                    return status, payload
                err = payload if isinstance(payload, dict) else {"error": str(payload)[:500]}
                if not _retryable(status):
                    raise ApiError(status, str(err.get("error", "")), err.get("issues"), method, path)
                why = f"HTTP {status}: {err.get('error', '')}"
                retry_after = headers.get("retry-after")
                if status == 429 and retry_after:
                    try:
                        wait = max(wait, float(retry_after))
                    except ValueError:
                        pass
            except (OSError, http.client.HTTPException, socket.timeout) as e:
                why = f"{type(e).__name__}: {e}"
            attempt += 1
            if deadline is not None and time.monotonic() + wait > deadline:
                raise Unavailable(f"{method} {self.url}{path}: {why} (gave up after {attempt} attempts)")
            if should_stop is not None and should_stop():
                raise Unavailable(f"{method} {self.url}{path}: {why} (stopped)")
            time.sleep(wait)
