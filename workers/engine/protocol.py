"""A request's params as received (``Params``), the protocol version, and checks of token-id and
number lists that a schema cannot make (ids inside the vocabulary, one number per token).

The framing and the server loop are in server.py, the schema check in schema.py, the params'
and results' types in protocol_types.py (generated), the errors in errors.py; PROTOCOL.md
documents the whole protocol.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import InvalidRequest
from .protocol_types import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION", "Params", "check_float_list", "check_int_list", "shown", "type_name"]


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
    """A request's params as they arrived: an object (null or absent: ``{}``). ``Engine.dispatch``
    checks them against the generated schema, then hands the command its generated dataclass."""

    def __init__(self, data: Any, where: str = "params"):
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InvalidRequest(f"{where}: expected an object, got {type_name(data)}")
        self.data = data


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
    """Finite numbers, ``length`` of them (one per response token): neither is a schema's to say."""
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected an array of numbers, got {type_name(value)}")
    if length is not None and len(value) != length:
        raise InvalidRequest(f"{where}: expected {length} numbers (one per response token), got {len(value)}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InvalidRequest(f"{where}[{i}]: expected a finite number, got {type_name(v)}")
    return [float(v) for v in value]
