"""JSON-lines protocol: request envelope, parameter validation, errors, and the server loop.

One JSON object per line on stdin -> one JSON object per line on stdout, in request order.
Logs go to stderr. The whole protocol is documented in workers/engine/PROTOCOL.md.
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

PROTOCOL_VERSION = 1

log = logging.getLogger("turnlens.engine")

# ---------------------------------------------------------------------------------------------
# Errors: each maps to the "type" of an error response
# ---------------------------------------------------------------------------------------------


class EngineError(Exception):
    type = "EngineError"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ParseError(EngineError):
    """The line is not a JSON object (bad JSON, bad UTF-8, not an object)."""

    type = "ParseError"


class InvalidRequest(EngineError):
    """The envelope or the params do not match the protocol (names the offending field)."""

    type = "InvalidRequest"


class UnknownCommand(EngineError):
    type = "UnknownCommand"


class NotInitialized(EngineError):
    """A command that needs a model came before init/load."""

    type = "NotInitialized"


# ---------------------------------------------------------------------------------------------
# Parameter validation (hand-written: the engine keeps its dependencies few)
# ---------------------------------------------------------------------------------------------

_MISSING = object()


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


class Params:
    """Typed access to a request's params; ``finish()`` rejects unknown keys (typos)."""

    def __init__(self, data: Any, where: str = "params"):
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InvalidRequest(f"{where}: expected an object, got {_type_name(data)}")
        self.data = data
        self.where = where
        self.used: set[str] = set()

    def has(self, name: str) -> bool:
        return name in self.data and self.data[name] is not None

    def _fail(self, name: str, expected: str, value: Any) -> InvalidRequest:
        shown = json.dumps(value)[:80] if _is_jsonable(value) else repr(value)[:80]
        return InvalidRequest(f"{self.where}.{name}: expected {expected}, got {shown}")

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        self.used.add(name)
        if name not in self.data or self.data[name] is None:
            if default is _MISSING:
                raise InvalidRequest(f"{self.where}.{name}: required")
            return default
        return self.data[name]

    def int(self, name: str, default: Any = _MISSING, *, min: int | None = None, max: int | None = None):
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
            raise self._fail(name, "an integer", v)
        v = int(v)
        if min is not None and v < min:
            raise self._fail(name, f"an integer >= {min}", v)
        if max is not None and v > max:
            raise self._fail(name, f"an integer <= {max}", v)
        return v

    def float(self, name: str, default: Any = _MISSING, *, min: float | None = None, max: float | None = None,
              min_exclusive: bool = False):
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self._fail(name, "a finite number", v)
        v = float(v)
        if min is not None and (v < min or (min_exclusive and v == min)):
            raise self._fail(name, f"a number {'>' if min_exclusive else '>='} {min}", v)
        if max is not None and v > max:
            raise self._fail(name, f"a number <= {max}", v)
        return v

    def bool(self, name: str, default: Any = _MISSING):
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, bool):
            raise self._fail(name, "a boolean", v)
        return v

    def str(self, name: str, default: Any = _MISSING, *, choices: tuple[str, ...] | None = None):
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, str):
            raise self._fail(name, "a string", v)
        if choices is not None and v not in choices:
            raise self._fail(name, "one of " + ", ".join(repr(c) for c in choices), v)
        return v

    def list(self, name: str, default: Any = _MISSING):
        v = self.raw(name, default)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, list):
            raise self._fail(name, "an array", v)
        return v

    def obj(self, name: str, required: bool = False) -> "Params":
        """A nested object (an empty one when absent and not required)."""
        v = self.raw(name, _MISSING if required else {})
        return Params(v, f"{self.where}.{name}")

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            known = ", ".join(sorted(self.used))
            raise InvalidRequest(f"{self.where}: unknown field(s) {', '.join(unknown)} (known: {known})")


def _is_jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


def check_int_list(value: Any, where: str, *, lo: int = 0, hi: int | None = None) -> list[int]:
    """A list of integer token ids in [lo, hi)."""
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected an array of integers, got {_type_name(value)}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidRequest(f"{where}[{i}]: expected an integer, got {_type_name(v)}")
        if v < lo or (hi is not None and v >= hi):
            raise InvalidRequest(f"{where}[{i}]: token id {v} outside [{lo}, {hi})")
        out.append(v)
    return out


def check_float_list(value: Any, where: str, length: int | None = None) -> list[float]:
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected an array of numbers, got {_type_name(value)}")
    if length is not None and len(value) != length:
        raise InvalidRequest(f"{where}: expected {length} numbers (one per response token), got {len(value)}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InvalidRequest(f"{where}[{i}]: expected a finite number, got {_type_name(v)}")
    return [float(v) for v in value]


# ---------------------------------------------------------------------------------------------
# Schema validation: protocol.schema.json, generated from the TypeScript client's zod schemas
# (scripts/gen-engine-protocol.ts), checks every request's params before a command reads them.
# The commands still check what a schema cannot say (token ids inside the vocabulary, one
# advantage per token, exactly one of prompts / prompt_ids).
# ---------------------------------------------------------------------------------------------

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.schema.json")
_schema_cache: dict | None = None
_validators: dict = {}


def protocol_schema() -> dict:
    global _schema_cache
    if _schema_cache is None:
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            _schema_cache = json.load(f)
    return _schema_cache


def param_defaults(cmd: str) -> dict[str, Any]:
    """The defaults the schema declares for a command's top-level params (the one place they are written)."""
    props = protocol_schema()["params"][cmd].get("properties", {})
    return {name: s["default"] for name, s in props.items() if "default" in s}


def _drop_nulls(v: Any) -> Any:
    """A null field means "absent" in this protocol (Params reads it as the default)."""
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


# A fast first pass. Item by item, jsonschema took 0.74 s for an update of 512 samples x 64
# tokens. The schema puts only type, range and length keywords (minItems <= 2, maxItems 2) on
# numeric arrays and the same keywords on every item of an array of objects, so extremes stand
# for the whole: an all-int (or all-float) array of 3+ items becomes [min, max, max], and
# objects of an array that share a shape (keys, value types, string values, array lengths) are
# checked as two stand-ins, one with every number at its minimum and one at its maximum. Same
# verdict, far less work; a failure is re-checked item by item to name the exact field.


def _num_list(v: Any) -> type | None:
    if v and type(v[0]) in (int, float) and all(type(x) is type(v[0]) for x in v):
        return type(v[0])
    return None


def _compact(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _compact(x) for k, x in v.items() if x is not None}
    if not isinstance(v, list):
        return v
    if len(v) > 2 and _num_list(v):
        lo, hi = min(v), max(v)
        return [lo, hi, hi]
    items = [_compact(x) for x in v]
    if len(items) < 3 or not all(isinstance(x, dict) for x in items):
        return items
    groups: dict[tuple, list[dict]] = {}
    out: list = []
    for d in items:
        sig = _shape(d)
        if sig is None:
            out.append(d)
        else:
            groups.setdefault(sig, []).append(d)
    for group in groups.values():
        out.extend(group if len(group) < 3 else [_extreme(group, min), _extreme(group, max)])
    return out


def _shape(d: dict) -> tuple | None:
    """Keys, value types, string and boolean values, numeric array lengths; None: not mergeable."""
    sig = []
    for k in sorted(d):
        x = d[k]
        if type(x) in (int, float):
            sig.append((k, type(x)))
        elif type(x) in (str, bool):
            sig.append((k, type(x), x))
        elif isinstance(x, list) and _num_list(x):
            sig.append((k, list, _num_list(x), len(x)))
        else:
            return None
    return tuple(sig)


def _extreme(group: list[dict], pick) -> dict:
    rep = {}
    for k, x in group[0].items():
        if isinstance(x, list):
            rep[k] = [pick(pick(d[k]) for d in group)] * len(x)
        elif type(x) in (int, float):
            rep[k] = pick(d[k] for d in group)
        else:
            rep[k] = x
    return rep


def _where(path) -> str:
    out = "params"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _expected(schema: Any) -> str:
    """A schema in words: "an integer >= 1", "a number or an array of numbers"."""
    if not isinstance(schema, dict):
        return "nothing" if schema is False else "anything"
    if "anyOf" in schema or "oneOf" in schema:
        return " or ".join(_expected(s) for s in schema.get("anyOf", schema.get("oneOf")))
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    t = schema.get("type")
    words = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "a boolean",
             "object": "an object", "null": "null"}
    if t == "array":
        return "an array" + (f" of {_expected(schema['items'])}" if isinstance(schema.get("items"), dict) else "")
    text = words.get(t, "a value")
    for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in schema and abs(schema[key]) != 9007199254740991:
            text += f" {op} {schema[key]}"
    return text


def _message(err) -> str:
    where = _where(err.absolute_path)
    v, kw, inst = err.validator_value, err.validator, err.instance
    shown = json.dumps(inst)[:80] if _is_jsonable(inst) else repr(inst)[:80]
    if kw == "additionalProperties":
        known = sorted(err.schema.get("properties", {}))
        unknown = sorted(set(inst) - set(known))
        return f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(known) or 'none'})"
    if kw == "required":
        missing = [k for k in v if k not in inst]
        return f"{where}.{missing[0]}: required" if missing else f"{where}: {err.message}"
    if kw in ("minItems", "maxItems"):
        return f"{where}: expected {'at least' if kw == 'minItems' else 'at most'} {v} item(s), got {len(inst)}"
    if kw == "minLength":
        return f"{where}: expected a non-empty string"
    if kw == "pattern":
        return f"{where}: expected a string matching {v}, got {shown}"
    if kw in ("anyOf", "oneOf", "type", "enum", "const"):
        return f"{where}: expected {_expected(err.schema)}, got {shown}"
    if kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"{where}: expected {_expected(err.schema)}, got {shown}"
    return f"{where}: {err.message}"


def validate_params(cmd: str, data: Any) -> None:
    """Raise InvalidRequest naming the first field of ``data`` that breaks ``cmd``'s schema."""
    if cmd not in _validators:
        from jsonschema import Draft202012Validator

        _validators[cmd] = Draft202012Validator(protocol_schema()["params"][cmd])
    data = data if data is not None else {}
    if _validators[cmd].is_valid(_compact(data)):
        return
    errors = list(_validators[cmd].iter_errors(_drop_nulls(data)))  # every item: the exact field
    if errors:
        # the shallowest error, then the first in document order: the field the caller got wrong
        err = min(errors, key=lambda e: (len(e.absolute_path), [str(x) for x in e.absolute_path]))
        raise InvalidRequest(_message(err))


# ---------------------------------------------------------------------------------------------
# JSON output: non-finite floats become null (JSON has no NaN/Infinity)
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Server loop
# ---------------------------------------------------------------------------------------------

Handler = Callable[[Params], dict]


def handle_line(line: bytes, dispatch: Callable[[str, Params], dict]) -> dict | None:
    """One request line -> one response object (None for a blank line)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return error_response(None, ParseError.type, f"request line is not valid UTF-8: {e}")
    if not text.strip():
        return None
    try:
        req = json.loads(text)
    except json.JSONDecodeError as e:
        return error_response(None, ParseError.type, f"request line is not valid JSON: {e.msg} at column {e.colno}")
    except (RecursionError, ValueError) as e:  # e.g. nesting deeper than the parser's stack
        return error_response(None, ParseError.type, f"request line is not valid JSON: {type(e).__name__}")
    if not isinstance(req, dict):
        return error_response(None, ParseError.type, f"request must be a JSON object, got {_type_name(req)}")
    req_id = req.get("id")
    if req_id is None or isinstance(req_id, bool) or not isinstance(req_id, (int, str)):
        return error_response(None, InvalidRequest.type, 'request.id: required, a string or an integer')
    cmd = req.get("cmd")
    if not isinstance(cmd, str):
        return error_response(req_id, InvalidRequest.type, 'request.cmd: required, a string')
    extra = sorted(set(req) - {"id", "cmd", "params"})
    if extra:
        return error_response(req_id, InvalidRequest.type, f"request: unknown field(s) {', '.join(extra)} (known: id, cmd, params)")
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


def serve(dispatch: Callable[[str, Params], dict], should_stop: Callable[[], bool],
          stdin=None, out: TextIO | None = None) -> int:
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
