"""Conversion of what trainers hand us into the server's request bodies.

The server's schemas (lib/schemas/metrics.ts, lib/schemas/rollouts.ts) are the one definition;
this module only coerces Python and numpy values into them and fails early, naming the field,
so that a bad value raises in the training loop instead of being rejected later by the server
in the background thread.
"""

import base64
import enum
import json
import math
import re
import sys
import time
from array import array
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from .contract import CONTRACT


def _rule(name: str) -> "re.Pattern[str]":
    # The server's patterns are JavaScript's: \w there is ASCII-only, hence re.ASCII ("récompense" is refused on both sides).
    r = CONTRACT[name]
    return re.compile(r["pattern"][:-2] + f"{{{r['minLength']},{r['maxLength']}}}$" if r["pattern"].endswith("+$") else r["pattern"], re.ASCII)


METRIC_KEY = _rule("metricKey")
BATCH_ID = _rule("batchId")
MAX_STEP = CONTRACT["maxStep"]
# NaN and ±Infinity travel as these texts (JSON has no such numbers); the server keeps them beside the series.
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# Turn fields the server stores in columns (from its schema), under their camelCase names and the
# snake_case spelling Python code uses; any other field a trainer gives goes into the turn's `info`.
_TURN_FIELDS = {**{_snake(f): f for f in CONTRACT["turnFields"]}, **{f: f for f in CONTRACT["turnFields"]}}
_TOKEN_ARRAYS = tuple(f for f in CONTRACT["turnFields"] if f.startswith("token") and f not in ("tokenIds", "tokenCount"))
_TRAJ_FIELDS = set(CONTRACT["trajectoryFields"])


class ShapeError(ValueError):
    """A value the server would reject; the message names the field (e.g. groups.g0[1].turns[2].reward)."""


def _as_float(value: Any, where: str) -> float:
    """A float from int/float/bool/numpy scalar/0-d tensor/numeric text; raises naming `where` otherwise."""
    if isinstance(value, bool):
        return float(value)
    try:
        if hasattr(value, "item") and not isinstance(value, (int, float)):
            value = value.item()
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise ShapeError(f"{where}: expected a number, got {type(value).__name__} {value!r:.60}") from None


def to_number(value: Any, where: str) -> float:
    """A finite float from int/float/numpy scalar/0-d tensor; raises naming `where` otherwise."""
    f = _as_float(value, where)
    if not math.isfinite(f):
        raise ShapeError(f"{where}: must be a finite number, got {f}")
    return f


def to_step(value: Any, where: str = "step") -> int:
    try:
        if hasattr(value, "item") and not isinstance(value, int):
            value = value.item()
        ok = float(value).is_integer()
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool) or not 0 <= int(value) <= MAX_STEP:
        raise ShapeError(f"{where}: expected an integer step in [0, 2^31-1], got {value!r:.60}")
    return int(value)


def metric_key(key: Any, where: str = "key") -> str:
    if not isinstance(key, str) or not METRIC_KEY.match(key):
        raise ShapeError(f"{where}: metric key {key!r:.80} must be 1-200 of ASCII letters, digits, _ . - / (e.g. rollout/success_rate)")
    return key


def sanitize_key(key: str) -> str:
    """Foreign tags (TensorBoard, MLflow) mapped onto the metric-key alphabet: other characters become _."""
    out = re.sub(r"[^\w/.-]", "_", key, flags=re.ASCII)[:200]
    return out or "_"


def metric_value(value: Any, where: str) -> Any:
    """A metric value as the server takes it: a finite float, or "NaN" / "Infinity" / "-Infinity"."""
    f = value if type(value) is float else _as_float(value, where)
    return f if f - f == 0.0 else NON_FINITE[repr(f)]


# Keys already checked (a training loop logs the same few keys every step); bounded, so a run
# that logs ever new keys does not grow it without end.
_GOOD_KEYS: set = set()


def metric_point(values: Mapping[str, Any], step: Any, wall_time: Optional[float] = None,
                 on_bad: Optional[Callable[[str, str], None]] = None) -> Dict[str, Any]:
    """One log call as a point. Without `on_bad` a bad key or value raises ShapeError naming it
    (importers report the row); with it, that value alone is dropped and `on_bad(key, why)` told."""
    if not isinstance(values, Mapping) or not values:
        raise ShapeError("values: expected a non-empty dict of metric key -> number")
    out: Dict[str, Any] = {}
    for k, v in values.items():
        try:
            if k not in _GOOD_KEYS:
                metric_key(k, f"values[{k!r}]")
                if len(_GOOD_KEYS) < 10_000:
                    _GOOD_KEYS.add(k)
            # plain finite floats pass as they are (v - v is 0.0 only for finite v); anything else is converted
            out[k] = v if type(v) is float and v - v == 0.0 else metric_value(v, f"values[{k!r}]")
        except ShapeError as e:
            if on_bad is None:
                raise
            on_bad(str(k), str(e))
    if not out:
        raise ShapeError("values: no value left to log")
    point: Dict[str, Any] = {"step": step if type(step) is int and 0 <= step <= MAX_STEP else to_step(step), "values": out}
    if wall_time is not None:
        point["wallTime"] = wall_time if type(wall_time) is float and wall_time - wall_time == 0.0 and wall_time > 0 else to_number(wall_time, "wallTime")
    return point


def columns_body(points: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """metric_point()s as one columnar batch (lib/schemas/metrics.ts MetricColumns): `steps`,
    `wallTimes` and one array per key, null where a point has no value for the key. About a third
    of the bytes of one object per point, and the server checks it array by array."""
    n = len(points)
    steps = [p["step"] for p in points]
    cols: Dict[str, List[Optional[float]]] = {}
    for i, p in enumerate(points):
        for k, v in p["values"].items():
            col = cols.get(k)
            if col is None:
                col = cols[k] = [None] * n
            col[i] = v
    body: Dict[str, Any] = {"steps": steps, "values": cols}
    if any("wallTime" in p for p in points):
        now = time.time()  # what the server would take for a point without one
        body["wallTimes"] = [p.get("wallTime", now) for p in points]
    return body


def columns_to_points(body: Mapping[str, Any]) -> Dict[str, Any]:
    """A columnar batch as `{points: [...]}`, for servers that predate columnar batches."""
    points = []
    walls = body.get("wallTimes")
    for i, step in enumerate(body["steps"]):
        p: Dict[str, Any] = {"step": step, "values": {k: col[i] for k, col in body["values"].items() if col[i] is not None}}
        if walls is not None:
            p["wallTime"] = walls[i]
        points.append(p)
    out = {"points": points}
    if "batchId" in body:
        out["batchId"] = body["batchId"]
    return out


def count_points(body: Mapping[str, Any]) -> int:
    """Metric values in a batch of either shape."""
    if "points" in body:
        return sum(len(p["values"]) for p in body["points"])
    return sum(len(col) - col.count(None) for col in body["values"].values())


def _jsonable(value: Any) -> Any:
    """numpy scalars/arrays and tuples into JSON values (for `info` and anchors)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if hasattr(value, "item"):
        return _jsonable(value.item())
    return str(value)


def anchor_text(anchor: Any) -> Optional[str]:
    """GiGPO anchors compare by content: text as is, anything else as canonical JSON."""
    if anchor is None or isinstance(anchor, str):
        return anchor
    return json.dumps(_jsonable(anchor), sort_keys=True, separators=(",", ":"))


# Turn fields that, given as exactly this type, the server takes as they are (a float only when
# finite): a turn of only these is copied in one pass instead of converted field by field.
_AS_IS = {"observation": str, "action": str, "reward": float, "anchor": str, "valid": bool, "done": bool,
          "logprob": float, "entropy": float, "advantage": float, "tokenCount": int, "agent": int}
# an int where a float goes (a reward of 0 or 1) is taken too, as its float, when a double holds it exactly
_EXACT_INT = 2**53
_FLOATS = [k for k, t in _AS_IS.items() if t is float]


def turn_body(turn: Mapping[str, Any], where: str) -> Dict[str, Any]:
    if type(turn) is dict and "reward" in turn:
        ints = False
        for k, v in turn.items():
            t = _AS_IS.get(k)
            tv = type(v)
            if tv is not t:
                if t is not float or tv is not int or not -_EXACT_INT <= v <= _EXACT_INT:
                    break
                ints = True
            elif t is float and v - v != 0.0:
                break
        else:  # the common case: plain str/float/int/bool fields only (two-thirds of a step's client time otherwise)
            out = dict(turn)
            if ints:  # as to_number gives them
                for k in _FLOATS:
                    if type(out.get(k)) is int:
                        out[k] = float(out[k])
            if "observation" not in out:
                out["observation"] = ""
            if "action" not in out:
                out["action"] = ""
            return out
    # type() first: isinstance against typing's Mapping costs more than the rest of a turn
    if type(turn) is not dict and not isinstance(turn, Mapping):
        raise ShapeError(f"{where}: expected a dict with observation, action, reward")
    out: Dict[str, Any] = {}
    info: Dict[str, Any] = {}
    for k, v in turn.items():
        name = _TURN_FIELDS.get(k)
        if name is None:
            info[k] = _jsonable(v)
            continue
        if name in ("observation", "action"):
            out[name] = v if type(v) is str else "" if v is None else str(v)
        elif name == "reward":
            # a plain finite float as it is (v - v is 0.0 only for finite v); the field's name is made only on the slow path
            out[name] = v if type(v) is float and v - v == 0.0 else to_number(v, f"{where}.reward")
        elif name in ("valid", "done"):
            out[name] = bool(v.item() if hasattr(v, "item") else v)
        elif name == "anchor":
            out[name] = anchor_text(v)
        elif name in ("agent", "tokenCount"):
            out[name] = None if v is None else int(to_number(v, f"{where}.{k}"))
        elif name == "info":
            if v is not None:
                info.update(_jsonable(v) if isinstance(v, Mapping) else {"info": _jsonable(v)})
        elif name.startswith("token"):
            out[name] = None if v is None else _token_array(v, name, f"{where}.{k}")
        else:  # logprob, entropy, advantage
            out[name] = v if type(v) is float and v - v == 0.0 else None if v is None else to_number(v, f"{where}.{k}")
    if "reward" not in out:
        raise ShapeError(f"{where}.reward: required")
    n = _count(out["tokenIds"]) if out.get("tokenIds") is not None else None
    for name in _TOKEN_ARRAYS:
        if out.get(name) is None:
            continue
        if n is None:
            raise ShapeError(f"{where}.{name}: needs tokenIds")
        if _count(out[name]) != n:
            raise ShapeError(f"{where}.{name}: {_count(out[name])} entries, tokenIds has {n} (one per token)")
    out.setdefault("observation", "")
    out.setdefault("action", "")
    if info:
        out["info"] = info
    return out


_INT32 = 2**31
_F32_MAX = 3.4028234663852886e38
_PACKED = {"tokenIds": ("int32", "i", "<i4"), "tokenLogprobs": ("float32", "f", "<f4"),
           "tokenAdvantages": ("float32", "f", "<f4"), "tokenEntropies": ("float32", "f", "<f4")}


def _pack(dtype: str, raw: bytes) -> Dict[str, str]:
    """Token numbers as the server takes them packed: base64 of little-endian int32 / float32."""
    return {"dtype": dtype, "data": base64.b64encode(raw).decode("ascii")}


def _count(x: Any) -> int:
    """How many values a token field holds (a list, or a packed array)."""
    if isinstance(x, dict):
        d = x["data"]
        return (len(d) * 3 // 4 - d[-2:].count("=")) // 4 if d else 0
    return len(x)


def _token_array(value: Any, name: str, where: str) -> Any:
    """A list, tuple, numpy array or tensor of per-token values as the request carries them: token
    numbers packed (int32 / float32 bytes, base64: made in C, no per-value work, and what the server
    stores anyway), texts as a list. A value that does not pack (a text among floats, an id out of
    32-bit range, NaN) is converted value by value, which names the first bad entry."""
    packed = _PACKED.get(name)
    if type(value) is dict and packed is not None:  # packed already (a body converted before)
        if value.get("dtype") != packed[0] or not isinstance(value.get("data"), str) or len(value) != 2:
            raise ShapeError(f"{where}: expected a list of per-token values or {{dtype: {packed[0]!r}, data: base64}}")
        return value
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if hasattr(value, "numpy"):
            value = value.numpy()
    if packed is not None and hasattr(value, "astype") and hasattr(value, "tobytes") and getattr(value, "ndim", 0) == 1:
        dtype, _, np_dtype = packed
        kind = getattr(getattr(value, "dtype", None), "kind", "")
        ok = kind in "iu" if dtype == "int32" else kind in "fiu"
        if ok and len(value):
            a = value.astype(np_dtype)
            # ids must survive the cast; floats must be finite in float32
            if (dtype == "int32" and (a == value).all()) or (dtype == "float32" and abs(float(a.astype("<f8").sum())) < float("inf")
                                                               and (abs(a) <= _F32_MAX).all()):
                return _pack(dtype, a.tobytes())
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise ShapeError(f"{where}: expected a list of per-token values, got {type(value).__name__}")
    if not value:
        return []
    if name == "tokenTexts":
        return list(value) if set(map(type, value)) == {str} else ["" if t is None else str(t) for t in value]
    if name == "tokenIds":
        try:  # array() converts in C and refuses what is not a 32-bit integer
            return _pack("int32", _le(array("i", value)))
        except (TypeError, OverflowError):
            pass
        out = []
        for i, t in enumerate(value):
            f = to_number(t, f"{where}[{i}]")
            if not f.is_integer() or not -_INT32 <= f < _INT32:
                raise ShapeError(f"{where}[{i}]: token id {t!r:.40} is not a 32-bit integer")
            out.append(int(f))
        return _pack("int32", _le(array("i", out)))
    try:
        a = array("f", value)  # in C; a value beyond float32 becomes an infinity here
    except (TypeError, OverflowError):
        a = None
    if a is not None:
        total = sum(a)  # NaN or an infinity anywhere makes the sum non-finite
        if total - total == 0.0:
            return _pack("float32", _le(a))
    checked = [to_number(t, f"{where}[{i}]") for i, t in enumerate(value)]
    for i, t in enumerate(checked):
        if abs(t) > _F32_MAX:
            raise ShapeError(f"{where}[{i}]: {t} is beyond float32, which token values are stored in")
    return _pack("float32", _le(array("f", checked)))


def _le(a: "array") -> bytes:
    """An array's bytes in little-endian order (the wire's), whatever the machine's."""
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def trajectory_body(traj: Any, where: str) -> Dict[str, Any]:
    """A trajectory is a list of turns, or a dict {turns, reward?, success?, truncated?}."""
    if type(traj) is not list and isinstance(traj, Mapping):
        unknown = set(traj) - _TRAJ_FIELDS
        if unknown:
            raise ShapeError(f"{where}: unknown trajectory fields {sorted(unknown)} (allowed: {sorted(_TRAJ_FIELDS)})")
        turns = traj.get("turns")
        body: Dict[str, Any] = {}
        if traj.get("reward") is not None:
            body["reward"] = to_number(traj["reward"], f"{where}.reward")
        if "success" in traj:
            body["success"] = bool(traj["success"])
        if "truncated" in traj:
            body["truncated"] = bool(traj["truncated"])
    else:
        turns, body = traj, {}
    if type(turns) is not list and (isinstance(turns, (str, bytes)) or not isinstance(turns, Iterable)):
        raise ShapeError(f"{where}.turns: expected a list of turns")
    body["turns"] = [turn_body(t, f"{where}.turns[{i}]") for i, t in enumerate(turns)]
    if not body["turns"]:
        raise ShapeError(f"{where}.turns: a trajectory needs at least one turn")
    return body


def groups_body(groups: Any, env_id: str) -> List[Dict[str, Any]]:
    """`{uid: [trajectory, ...]}` or a list of server-shaped groups {uid, envId?, taskSeed?, trajectories}."""
    if isinstance(groups, Mapping):
        items = [{"uid": str(uid), "trajectories": trajs} for uid, trajs in groups.items()]
    elif isinstance(groups, Iterable) and not isinstance(groups, (str, bytes)):
        items = list(groups)
    else:
        raise ShapeError("groups: expected {uid: [trajectories]} or a list of {uid, trajectories}")
    if not items:
        raise ShapeError("groups: at least one group is required")
    out = []
    for gi, g in enumerate(items):
        if not isinstance(g, Mapping) or "uid" not in g or "trajectories" not in g:
            raise ShapeError(f"groups[{gi}]: expected {{uid, trajectories}}")
        uid = str(g["uid"])
        where = f"groups[{uid}]"
        trajs = g["trajectories"]
        if isinstance(trajs, (str, bytes, Mapping)) or not isinstance(trajs, Iterable):
            raise ShapeError(f"{where}.trajectories: expected a list")
        body = {
            "uid": uid,
            "envId": str(g.get("envId") or g.get("env_id") or env_id),
            "taskSeed": int(to_number(g.get("taskSeed", g.get("task_seed", 0)), f"{where}.taskSeed")),
            "trajectories": [trajectory_body(t, f"{where}[{i}]") for i, t in enumerate(trajs)],
        }
        if not body["trajectories"]:
            raise ShapeError(f"{where}.trajectories: a group needs at least one trajectory")
        out.append(body)
    return out


def step_body(step: Any, groups: Any, env_id: str, estimator: Optional[str] = None,
              params: Optional[Mapping[str, Any]] = None, diagnostics: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"step": to_step(step), "groups": groups_body(groups, env_id)}
    if estimator is not None:
        body["estimator"] = str(estimator)
    if params is not None:
        body["params"] = _jsonable(dict(params))
    if diagnostics is not None:
        body["diagnostics"] = _jsonable(dict(diagnostics))
    return body


def count_turns(body: Mapping[str, Any]) -> int:
    return sum(len(t["turns"]) for g in body["groups"] for t in g["trajectories"])


def mask_runs(mask: Any) -> List[Tuple[int, int]]:
    """[start, end) of each run of true entries of a token mask (a loss or response mask): the
    trained spans that become turns, for every trainer whose batches mark them this way."""
    out: List[Tuple[int, int]] = []
    start = None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(mask)))
    return out


def config_value(cfg: Any, path: str, default: Any = None) -> Any:
    """A trainer's setting by dotted path ("algorithm.adv_estimator") through dicts, OmegaConf configs,
    dataclasses and argparse namespaces; `default` where a part is missing or None. An enum setting
    (verl's and SkyRL's estimator names) gives its value."""
    cur = cfg
    for part in path.split("."):
        if cur is None:
            return default
        try:
            cur = cur.get(part) if isinstance(cur, Mapping) else getattr(cur, part, None)
        except Exception:  # OmegaConf struct mode refuses unknown keys; a missing interpolation raises
            cur = None
    if cur is None:
        return default
    return cur.value if isinstance(cur, enum.Enum) else cur
