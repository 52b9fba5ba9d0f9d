"""Schema validation: protocol.schema.json, generated from the TypeScript client's zod schemas
(scripts/gen-engine-protocol.ts), checks every request's params before a command reads them:
types, ranges, choices, required and unknown fields. The defaults live in the generated
dataclasses (protocol_types.py), which the commands receive.

The commands still check what a schema cannot say (token ids inside the vocabulary, one advantage
per token, exactly one of prompts / prompt_ids).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .errors import InvalidRequest
from .protocol import shown

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.schema.json")
_schema_cache: dict | None = None
_validators: dict = {}


def protocol_schema() -> dict:
    global _schema_cache
    if _schema_cache is None:
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            _schema_cache = json.load(f)
    return _schema_cache


def _drop_nulls(v: Any) -> Any:
    """A null field means "absent" in this protocol (its dataclass gives it the default)."""
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
    words = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "a boolean",
        "object": "an object",
        "null": "null",
    }
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
    got = shown(inst)
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
        return f"{where}: expected a string matching {v}, got {got}"
    if kw in ("anyOf", "oneOf", "type", "enum", "const"):
        return f"{where}: expected {_expected(err.schema)}, got {got}"
    if kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"{where}: expected {_expected(err.schema)}, got {got}"
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
