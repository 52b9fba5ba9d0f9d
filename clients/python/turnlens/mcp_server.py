"""`turnlens mcp`: a Model Context Protocol server over stdio, so an AI assistant can read runs.

MCP's JSON-RPC 2.0 on stdin/stdout, one JSON message a line (initialize, notifications/initialized,
ping, tools/list, tools/call). Each tool wraps turnlens.Api; a result is one text content block of
compact JSON, a failed call a result with isError true and the API's message (the server keeps
serving). Standard library only, so the client needs no MCP package.
"""

import json
import math
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from .api import Api, ApiRun
from .transport import ApiError, Unavailable

# Handshake revisions this server speaks; a client asking for another gets the newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
# Caps on what one answer carries, so a result fits an assistant's context.
DEFAULT_LIMIT, DEFAULT_POINTS, MAX_TEXT = 50, 200, 2000


class ToolError(Exception):
    """A call the tool cannot answer; its message goes back with isError true."""


def _clean(v: Any) -> Any:
    """JSON-safe: a non-finite float as its text ("NaN", "Infinity", "-Infinity")."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def _dumps(v: Any) -> str:
    return json.dumps(_clean(v), separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)


def _short(text: Any) -> Any:
    if isinstance(text, str) and len(text) > MAX_TEXT:
        return text[:MAX_TEXT] + f"... [{len(text) - MAX_TEXT} more characters]"
    return text


# ---------------------------------------------------------------- tools

def _run_row(r: ApiRun) -> Dict[str, Any]:
    return {"id": r.id, "name": r.name, "project": r.project, "status": r.status, "createdAt": r.created_at,
            "envId": r.env_id, "estimator": r.estimator, "tags": r.tags}


def list_runs(api: Api, a: Dict[str, Any]) -> Any:
    filters = {k: a[k] for k in ("status", "tag", "estimator") if a.get(k) is not None}
    if a.get("name"):
        filters["q"] = a["name"]
    if a.get("config"):
        filters["config"] = a["config"]
    runs = api.runs(project=a.get("project"), filters=filters, order=a.get("order") or None)
    limit = a.get("limit", DEFAULT_LIMIT)
    return {"total": len(runs), "runs": [_run_row(r) for r in runs[:limit]]}


def get_run(api: Api, a: Dict[str, Any]) -> Any:
    run = api.run(a["run_id"])
    return {**_run_row(run), "config": run.config, "summary": run.summary, "metricKeys": run.keys(),
            "notes": run.raw.get("notes"), "error": run.raw.get("error")}


def get_history(api: Api, a: Dict[str, Any]) -> Any:
    run = api.run(a["run_id"])
    keys = a.get("keys") or run.keys()
    points = a.get("max_points", DEFAULT_POINTS)
    if 0 < points < 10:  # the server's downsampling keeps at least 10 points a key
        raise ToolError(f"arguments.max_points: expected 0 (every point) or at least 10, got {points}")
    rows = run.history(keys=keys, samples=points if points else None, pandas=False)
    series = {k: {"steps": [], "values": []} for k in keys}
    for row in rows:
        for k in keys:
            if k in row:
                series[k]["steps"].append(row["_step"])
                series[k]["values"].append(row[k])
    return {"runId": run.id, "series": series}


def list_steps(api: Api, a: Dict[str, Any]) -> Any:
    run = api.run(a["run_id"])
    if a.get("step") is None:
        return {"runId": run.id, "steps": run.steps(pandas=False)}
    return {"runId": run.id, "step": a["step"], "groups": run.groups(a["step"], pandas=False)}


SEARCH_KEYS = ("text", "in", "outcome", "advantage", "step", "min_step", "max_step", "min_turn", "max_turn",
               "min_return", "max_return", "min_length", "max_length", "min_advantage", "max_advantage", "task",
               "env_id", "sort", "order", "label")


def search_trajectories(api: Api, a: Dict[str, Any]) -> Any:
    if not a.get("run_id") and not a.get("project"):
        raise ToolError("arguments: give run_id or project (or both)")
    query = {("in_" if k == "in" else k): a[k] for k in SEARCH_KEYS if a.get(k) is not None}
    rows = api.search(runs=[a["run_id"]] if a.get("run_id") else None, project=a.get("project"),
                      limit=a.get("limit", DEFAULT_LIMIT), pandas=False, **query)
    return {"count": len(rows), "trajectories": rows}


def get_trajectory_turns(api: Api, a: Dict[str, Any]) -> Any:
    run = api.run(a["run_id"])
    rows = run.turns(step=a["step"], group=a.get("group"), success=a.get("success"), pandas=False)
    limit = a.get("limit", 200)
    out = []
    for r in rows[:limit]:
        r = {k: v for k, v in r.items() if k != "tokens" and v is not None}  # token ids: long, unreadable
        r["observation"], r["action"] = _short(r.get("observation")), _short(r.get("action"))
        out.append(r)
    return {"runId": run.id, "step": a["step"], "total": len(rows), "turns": out}


def get_credit(api: Api, a: Dict[str, Any]) -> Any:
    run = api.run(a["run_id"])
    credit = run.credit(a["step"], a["group"], estimator=a.get("estimator"), params=a.get("params"))
    return credit.raw


def list_alerts(api: Api, a: Dict[str, Any]) -> Any:
    alerts = api.alerts(a.get("run_id"), limit=a.get("limit", DEFAULT_LIMIT))
    return {"count": len(alerts), "alerts": alerts}


def get_failure_clusters(api: Api, a: Dict[str, Any]) -> Any:
    return api.failure_clusters(a["run_id"], a.get("from_step"), a.get("to_step"), a.get("max_clusters", 6))


def list_labels(api: Api, a: Dict[str, Any]) -> Any:
    if a.get("run_id"):
        rows = api.run(a["run_id"]).labels(label=a.get("label"), pandas=False)
        return {"runId": a["run_id"], "count": len(rows), "labels": [dict(r, note=_short(r["note"])) for r in rows]}
    if not a.get("project"):
        raise ToolError("arguments: give run_id (its labelled trajectories) or project (its label set)")
    return {"project": a["project"], "labels": api.labels(a["project"], pandas=False)}


def get_task_timeline(api: Api, a: Dict[str, Any]) -> Any:
    if sum(a.get(k) is not None for k in ("task", "seed", "prompt")) != 1:
        raise ToolError("arguments: give exactly one of task (group uid), seed or prompt")
    rows = api.task_timeline(a["run_ids"], task=a.get("task"), seed=a.get("seed"), env_id=a.get("env_id"),
                             prompt=a.get("prompt"), pandas=False)
    return {"count": len(rows), "trajectories": rows}


def diff_trajectories(api: Api, a: Dict[str, Any]) -> Any:
    d = api.trajectory_diff(a["a"], a["b"])
    for t in d["turns"]:
        for k in ("a", "b"):
            if t[k]:
                t[k] = {**t[k], "observation": _short(t[k]["observation"]), "action": _short(t[k]["action"])}
    return d


def _schema(props: Dict[str, Any], required: Tuple[str, ...] = ()) -> Dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


RUN_ID = {"type": "string", "description": "the run's id (list_runs gives it)"}
STEP = {"type": "integer", "minimum": 0, "description": "a rollout step (list_steps gives them)"}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 1000}

# name -> (description, input schema, handler)
TOOLS: Dict[str, Tuple[str, Dict[str, Any], Callable[[Api, Dict[str, Any]], Any]]] = {
    "list_runs": (
        "List TurnLens runs (newest first by default): id, name, project, status, env, estimator, tags. "
        "Filter by project, a name substring, status, tag or config clauses.",
        _schema({"project": {"type": "string"},
                 "name": {"type": "string", "description": "part of the run name"},
                 "status": {"type": "string", "description": "e.g. running, succeeded, failed"},
                 "tag": {"type": "string"},
                 "estimator": {"type": "string", "description": "advantage estimator, e.g. grpo, gigpo"},
                 "config": {"type": "string", "description": "config clauses, e.g. 'lr<=1e-4;env.size=6'"},
                 "order": {"type": "string", "description": "createdAt, name, status or metric:<key>; '-' first for descending"},
                 "limit": {**LIMIT, "default": DEFAULT_LIMIT}}),
        list_runs),
    "get_run": (
        "One run: its config, summary (last value of each metric), status, metric keys, notes and error.",
        _schema({"run_id": RUN_ID}, ("run_id",)), get_run),
    "get_history": (
        "A run's metric series (steps and values per key). keys defaults to every key; max_points "
        f"downsamples each key to about that many points (default {DEFAULT_POINTS}, min/max kept; 0 = every point).",
        _schema({"run_id": RUN_ID, "keys": {"type": "array", "items": {"type": "string"}},
                 "max_points": {"type": "integer", "minimum": 0, "default": DEFAULT_POINTS}}, ("run_id",)),
        get_history),
    "list_steps": (
        "A run's rollout steps (step, groups, trajectories, success rate, mean reward); with step, that "
        "step's task groups (uid, env, trajectories, success rate) for get_trajectory_turns and get_credit.",
        _schema({"run_id": RUN_ID, "step": STEP}, ("run_id",)), list_steps),
    "search_trajectories": (
        "Find trajectories in a run or project by text in observations/actions, outcome, return, length, "
        "step, and per-turn conditions (turn index, advantage sign). Rows name run, step, group, index, "
        "reward, success, length and the matched turns.",
        _schema({"run_id": RUN_ID, "project": {"type": "string"},
                 "text": {"type": "string", "description": 'words and "quoted phrases"'},
                 "in": {"type": "string", "enum": ["any", "observation", "action"]},
                 "outcome": {"type": "string", "enum": ["success", "failure"]},
                 "advantage": {"type": "string", "enum": ["positive", "negative", "zero"],
                               "description": "a turn's advantage sign"},
                 "step": STEP, "min_step": STEP, "max_step": STEP,
                 "min_turn": {"type": "integer", "minimum": 0, "description": "0-based turn index"},
                 "max_turn": {"type": "integer", "minimum": 0},
                 "min_return": {"type": "number"}, "max_return": {"type": "number"},
                 "min_length": {"type": "integer", "minimum": 0}, "max_length": {"type": "integer", "minimum": 0},
                 "min_advantage": {"type": "number"}, "max_advantage": {"type": "number"},
                 "task": {"type": "string", "description": "group uid"}, "env_id": {"type": "string"},
                 "label": {"type": "string", "description": "only trajectories carrying this label"},
                 "sort": {"type": "string", "enum": ["step", "return", "length"]},
                 "order": {"type": "string", "enum": ["asc", "desc"]},
                 "limit": {**LIMIT, "default": DEFAULT_LIMIT}}),
        search_trajectories),
    "get_trajectory_turns": (
        "Every turn at a run's rollout step (optionally one task group by uid, or only successes/failures): "
        "observation, action, reward, advantage, logprob, valid, done, with step, group uid and trajectory index. "
        f"Texts over {MAX_TEXT} characters are cut.",
        _schema({"run_id": RUN_ID, "step": STEP, "group": {"type": "string", "description": "group uid (e.g. task-0) or id"},
                 "success": {"type": "boolean"}, "limit": {**LIMIT, "maximum": 5000, "default": 200}},
                ("run_id", "step")),
        get_trajectory_turns),
    "get_credit": (
        "A task group's per-turn credit (advantages) at a step: as stored, or recomputed with another "
        "estimator (e.g. grpo, gigpo) and params; trajectories x turns arrays of advantages, rewards, valid.",
        _schema({"run_id": RUN_ID, "step": STEP, "group": {"type": "string", "description": "group uid (e.g. task-0) or id"},
                 "estimator": {"type": "string", "description": "stored (default), grpo, gigpo, ..."},
                 "params": {"type": "object", "description": "estimator params, e.g. {\"gamma\": 0.95}"}},
                ("run_id", "step", "group")),
        get_credit),
    # alerts and failure clusters
    "list_alerts": (
        "Alerts raised by the project's monitor rules (entropy falling, zero-variance share rising, clip ratio, "
        "responses at the length cap, KL accelerating, advantage drift, or the project's own), newest first: "
        "rule, metric, the step it began and the last step it held, the value compared, a message.",
        _schema({"run_id": RUN_ID, "limit": {**LIMIT, "maximum": 200, "default": DEFAULT_LIMIT}}),
        list_alerts),
    "get_failure_clusters": (
        "A run's failed trajectories over a step range grouped by what they did (TF-IDF of action n-grams, "
        "deterministic k-means): each cluster's top n-grams, size, size per step, example trajectory ids, and "
        "a 'new' or 'growing' flag.",
        _schema({"run_id": RUN_ID, "from_step": STEP, "to_step": STEP,
                 "max_clusters": {"type": "integer", "minimum": 2, "maximum": 12, "default": 6}}, ("run_id",)),
        get_failure_clusters),
    # labels and task timelines
    "list_labels": (
        "Labels people put on trajectories or turns (e.g. 'reward hacking', 'loops'): with run_id, that run's "
        "labelled trajectories (step, task, index, turn or null for the whole trajectory, label, note, "
        "trajectoryId), optionally of one label; with project, its label set. search_trajectories also "
        "filters by label.",
        _schema({"run_id": RUN_ID, "project": {"type": "string"}, "label": {"type": "string", "description": "a label's name"}}),
        list_labels),
    "get_task_timeline": (
        "One task across training: its trajectories at every step of one or more runs (outcome, return, "
        "length, mean advantage), by group uid (task), task seed (seed, with env_id) or prompt (the first "
        "observation's text, compared trimmed: finds a verl/TRL task whose uid is new every step).",
        _schema({"run_ids": {"type": "array", "items": {"type": "string"}, "description": "run ids (1-10)"},
                 "task": {"type": "string", "description": "group uid"}, "seed": {"type": "integer"},
                 "prompt": {"type": "string", "maxLength": 4000, "description": "the task's prompt (first observation)"},
                 "env_id": {"type": "string"}}, ("run_ids",)),
        get_task_timeline),
    "diff_trajectories": (
        "Two trajectories (any steps, any runs) side by side: turns aligned by index, each with action, "
        "reward and advantage, and whether the two actions differ; `differing` counts those turns.",
        _schema({"a": {"type": "string", "description": "a trajectory id"},
                 "b": {"type": "string", "description": "another trajectory id"}}, ("a", "b")),
        diff_trajectories),
}

TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict}


def check_arguments(schema: Dict[str, Any], args: Any) -> None:
    """The input schema's checks a wrong call most likely breaks, each naming the field."""
    if not isinstance(args, dict):
        raise ToolError(f"arguments: expected an object, got {type(args).__name__}")
    for name in schema["required"]:
        if args.get(name) is None:
            raise ToolError(f"arguments.{name}: required")
    for name, v in args.items():
        spec = schema["properties"].get(name)
        if spec is None:
            raise ToolError(f"arguments.{name}: unknown (expected one of {', '.join(schema['properties'])})")
        if v is None:
            continue
        want = TYPES[spec["type"]]
        if not isinstance(v, want) or (isinstance(v, bool) and spec["type"] != "boolean"):
            raise ToolError(f"arguments.{name}: expected {spec['type']}, got {json.dumps(v)[:80]}")
        if spec["type"] == "array" and not all(isinstance(x, str) for x in v):
            raise ToolError(f"arguments.{name}: expected an array of strings")
        if "enum" in spec and v not in spec["enum"]:
            raise ToolError(f"arguments.{name}: expected one of {', '.join(spec['enum'])}, got {v!r}")
        if "minimum" in spec and v < spec["minimum"]:
            raise ToolError(f"arguments.{name}: expected at least {spec['minimum']}, got {v}")
        if "maximum" in spec and v > spec["maximum"]:
            raise ToolError(f"arguments.{name}: expected at most {spec['maximum']}, got {v}")


def call_tool(api: Api, name: Any, args: Any) -> Dict[str, Any]:
    """A tools/call result; every failure is a result with isError true, never an exception."""
    try:
        if name not in TOOLS:
            raise ToolError(f"unknown tool {name!r} (tools: {', '.join(TOOLS)})")
        _, schema, handler = TOOLS[name]
        args = {} if args is None else args
        check_arguments(schema, args)
        text, error = _dumps(handler(api, args)), False
    except (ToolError, ApiError, Unavailable, ValueError, KeyError, TypeError) as e:
        text, error = str(e) if not isinstance(e, KeyError) else f"missing {e}", True
    except Exception as e:  # a bug or an answer no tool foresaw: report it, keep serving
        traceback.print_exc(file=sys.stderr)
        text, error = f"{type(e).__name__}: {e}", True
    return {"content": [{"type": "text", "text": text}], "isError": error}


# ---------------------------------------------------------------- JSON-RPC over stdio

class Server:
    def __init__(self, api: Api):
        self.api = api

    def handle(self, msg: Any) -> Optional[Dict[str, Any]]:
        """The response to one message, or None (a notification, or a response from the client)."""
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "method" not in msg:
            if isinstance(msg, dict) and ("result" in msg or "error" in msg):
                return None  # a response to a request this server never sends
            return _error(msg.get("id") if isinstance(msg, dict) else None, INVALID_REQUEST, "not a JSON-RPC 2.0 request")
        method, params, has_id = msg["method"], msg.get("params") or {}, "id" in msg
        if not has_id:
            return None  # notifications (initialized, cancelled, ...) need no answer
        rid = msg["id"]
        if not isinstance(params, dict):
            return _error(rid, INVALID_PARAMS, "params: expected an object")
        if method == "initialize":
            asked = params.get("protocolVersion")
            from . import __version__

            return _result(rid, {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "turnlens", "version": __version__},
                "instructions": "Read TurnLens RL runs: list_runs finds a run id; get_run, get_history for metrics; "
                                "list_steps, search_trajectories, get_trajectory_turns, get_credit for rollouts."})
        if method == "ping":
            return _result(rid, {})
        if method == "tools/list":
            return _result(rid, {"tools": [{"name": n, "description": d, "inputSchema": s} for n, (d, s, _) in TOOLS.items()]})
        if method == "tools/call":
            return _result(rid, call_tool(self.api, params.get("name"), params.get("arguments")))
        return _error(rid, METHOD_NOT_FOUND, f"method not found: {method}")

    def serve(self, stdin: Any, stdout: Any) -> None:
        for line in stdin:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError as e:
                reply: Optional[Dict[str, Any]] = _error(None, PARSE_ERROR, f"parse error: {e}")
            else:
                try:
                    reply = self.handle(msg)
                except Exception as e:  # never let one message end the session
                    traceback.print_exc(file=sys.stderr)
                    reply = _error(msg.get("id") if isinstance(msg, dict) else None, INTERNAL_ERROR, f"{type(e).__name__}: {e}")
            if reply is not None:
                stdout.write(json.dumps(reply, separators=(",", ":"), ensure_ascii=False) + "\n")
                stdout.flush()


def _result(rid: Any, result: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: Any, code: int, message: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def main(url: Optional[str] = None, token: Optional[str] = None, timeout: float = 15.0) -> int:
    """Serves stdin/stdout until stdin closes. stdout carries only protocol messages: anything else
    printed goes to stderr."""
    import io

    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
    sys.stdout = sys.stderr
    with Api(url=url, token=token, timeout=timeout) as api:
        try:
            Server(api).serve(stdin, stdout)
        except KeyboardInterrupt:
            pass
    return 0


__all__: List[str] = ["main", "Server", "TOOLS", "call_tool"]
