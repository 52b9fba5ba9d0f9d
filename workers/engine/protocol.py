"""Reading a request's params: the protocol version, typed access to params (``Params``) and
checks of token-id and number lists.

The framing and the server loop are in server.py, the schema check in schema.py, the errors in
errors.py; PROTOCOL.md documents the whole protocol.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import InvalidRequest

PROTOCOL_VERSION = 1

_MISSING = object()


def type_name(v: Any) -> str:
    """A value's JSON type, for error messages."""
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


def shown(v: Any) -> str:
    """A value as an error message quotes it: JSON, cut to 80 characters."""
    try:
        return json.dumps(v)[:80]
    except (TypeError, ValueError):
        return repr(v)[:80]


class Params:
    """Typed access to a request's params; ``finish()`` rejects unknown keys (typos)."""

    def __init__(self, data: Any, where: str = "params"):
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InvalidRequest(f"{where}: expected an object, got {type_name(data)}")
        self.data = data
        self.where = where
        self.used: set[str] = set()

    def has(self, name: str) -> bool:
        return name in self.data and self.data[name] is not None

    def _fail(self, name: str, expected: str, value: Any) -> InvalidRequest:
        return InvalidRequest(f"{self.where}.{name}: expected {expected}, got {shown(value)}")

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

    def float(
        self,
        name: str,
        default: Any = _MISSING,
        *,
        min: float | None = None,
        max: float | None = None,
        min_exclusive: bool = False,
    ):
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

    def obj(self, name: str, required: bool = False) -> Params:
        """A nested object (an empty one when absent and not required)."""
        v = self.raw(name, _MISSING if required else {})
        return Params(v, f"{self.where}.{name}")

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            known = ", ".join(sorted(self.used))
            raise InvalidRequest(f"{self.where}: unknown field(s) {', '.join(unknown)} (known: {known})")


def check_int_list(value: Any, where: str, *, lo: int = 0, hi: int | None = None) -> list[int]:
    """A list of integer token ids in [lo, hi)."""
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected an array of integers, got {type_name(value)}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidRequest(f"{where}[{i}]: expected an integer, got {type_name(v)}")
        if v < lo or (hi is not None and v >= hi):
            raise InvalidRequest(f"{where}[{i}]: token id {v} outside [{lo}, {hi})")
        out.append(v)
    return out


def check_float_list(value: Any, where: str, length: int | None = None) -> list[float]:
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected an array of numbers, got {type_name(value)}")
    if length is not None and len(value) != length:
        raise InvalidRequest(f"{where}: expected {length} numbers (one per response token), got {len(value)}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InvalidRequest(f"{where}[{i}]: expected a finite number, got {type_name(v)}")
    return [float(v) for v in value]
