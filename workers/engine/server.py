"""The server loop: one JSON request per line on stdin -> one JSON response per line on stdout,
in request order; logs on stderr. The commands come in as ``dispatch`` (engine.py), so this module
knows the framing and the error envelope, not what a command does.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
import traceback
from typing import Any, Callable, TextIO

from .errors import EngineError, InvalidRequest, ParseError
from .protocol import Params, type_name

log = logging.getLogger("turnlens.engine")

Dispatch = Callable[[str, Params], dict]


def configure_logging() -> None:
    level = os.environ.get("TURNLENS_ENGINE_LOG", "INFO").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


# JSON has no NaN/Infinity: non-finite floats are sent as null.
def _sanitize(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _sanitize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_sanitize(x) for x in v]
    return v


def encode_response(obj: dict) -> str:
    return json.dumps(_sanitize(obj), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def error_response(req_id: Any, err_type: str, message: str) -> dict:
    return {"id": req_id, "ok": False, "error": {"type": err_type, "message": message}}


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    # Python's parser reads NaN and Infinity, which JSON lacks and the schema's number ranges let
    # through (NaN compares false with every bound): refused here, no command sees one
    raise _NonFinite(name)


def handle_line(line: bytes, dispatch: Dispatch) -> dict | None:
    """One request line -> one response object (None for a blank line)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return error_response(None, ParseError.type, f"request line is not valid UTF-8: {e}")
    if not text.strip():
        return None
    try:
        req = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        return error_response(None, ParseError.type, f"request line is not valid JSON: {e.msg} at column {e.colno}")
    except _NonFinite as e:
        return error_response(None, ParseError.type, f"request line is not valid JSON: {e} is not a JSON number")
    except (RecursionError, ValueError) as e:  # e.g. nesting deeper than the parser's stack
        return error_response(None, ParseError.type, f"request line is not valid JSON: {type(e).__name__}")
    if not isinstance(req, dict):
        return error_response(None, ParseError.type, f"request must be a JSON object, got {type_name(req)}")
    req_id = req.get("id")
    if req_id is None or isinstance(req_id, bool) or not isinstance(req_id, (int, str)):
        return error_response(None, InvalidRequest.type, "request.id: required, a string or an integer")
    cmd = req.get("cmd")
    if not isinstance(cmd, str):
        return error_response(req_id, InvalidRequest.type, "request.cmd: required, a string")
    extra = sorted(set(req) - {"id", "cmd", "params"})
    if extra:
        return error_response(
            req_id, InvalidRequest.type, f"request: unknown field(s) {', '.join(extra)} (known: id, cmd, params)"
        )
    try:
        params = Params(req.get("params"), "params")
        t0 = time.perf_counter()
        result = dispatch(cmd, params)
        log.debug("%s id=%s took %.3fs", cmd, req_id, time.perf_counter() - t0)
        return {"id": req_id, "ok": True, "result": result}
    except EngineError as e:
        return error_response(req_id, e.type, e.message)
    except MemoryError as e:
        return error_response(req_id, "OutOfMemory", f"{type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - any failure becomes a structured error; keep serving
        if type(e).__name__ == "OutOfMemoryError":  # torch.cuda.OutOfMemoryError
            return error_response(req_id, "OutOfMemory", str(e))
        log.error("command %s (id=%s) failed:\n%s", cmd, req_id, traceback.format_exc())
        return error_response(req_id, "InternalError", f"{type(e).__name__}: {e}")


def protect_stdout() -> TextIO:
    """Keep the protocol channel clean: responses go to a private dup of fd 1, and fd 1 itself
    (Python prints, C libraries, exporters that print progress) is pointed at stderr."""
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(proto_fd, "w", encoding="utf-8", buffering=1, newline="\n")


def serve(dispatch: Dispatch, should_stop: Callable[[], bool], stdin=None, out: TextIO | None = None) -> int:
    stdin = stdin if stdin is not None else sys.stdin.buffer
    out = out if out is not None else protect_stdout()
    while True:
        line = stdin.readline()
        if not line:  # EOF: the client went away
            log.info("stdin closed; exiting")
            return 0
        resp = handle_line(line, dispatch)
        if resp is None:
            continue
        try:
            text = encode_response(resp)
        except (TypeError, ValueError) as e:  # a result that is not JSON: a bug, still answer
            text = encode_response(error_response(resp.get("id"), "InternalError", f"unserialisable result: {e}"))
        out.write(text + "\n")
        out.flush()
        if should_stop():
            return 0
