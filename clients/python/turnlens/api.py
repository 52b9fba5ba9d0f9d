"""Read runs back from a TurnLens server: metrics, rollout steps, trajectories, turns and credit.

    import turnlens
    api = turnlens.Api()                                    # $TURNLENS_URL, else http://127.0.0.1:3000
    run = api.runs(project="sokoban", filters={"status": "succeeded"}, order="-createdAt")[0]
    df = run.history(keys=["train/reward"])                 # every point; samples=500 to downsample
    turns = run.turns(step=10)                              # every turn of step 10
    credit = run.credit(step=10, group="task-0", estimator="grpo")

Tables (`history`, `steps`, `trajectories`, `turns`, `Credit.table`) are pandas DataFrames when
pandas is installed, else lists of dicts; `pandas=False` asks for the lists, `pandas=True` for a
DataFrame. Every page of a paginated endpoint is fetched for the caller. Standard library only.
"""

import array
import base64
import json
import os
import sys
import time
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .transport import ApiError, Transport, Unavailable

API = "/api/v1"
# Most keys one export request names (the server's limit keeps the URL within its header limit).
EXPORT_KEYS = 100
# Page sizes: each endpoint's maximum.
RUNS_PAGE, STEPS_PAGE, TRAJECTORIES_PAGE, TURNS_PAGE = 500, 1000, 200, 1000
RUN_COLUMNS = {"created_at": "createdAt", "createdat": "createdAt", "env_id": "envId", "envid": "envId",
               "name": "name", "status": "status", "estimator": "estimator"}
FILTER_ALIASES = {"env_id": "envId", "env": "envId", "search": "q", "name": "q", "tags": "tag"}
# Trajectory search parameters, snake_case as a Python caller writes them -> the server's names.
SEARCH_PARAMS = {"in_": "in", "where": "in", "min_length": "minLength", "max_length": "maxLength", "min_return": "minReturn",
                 "max_return": "maxReturn", "min_step": "minStep", "max_step": "maxStep", "env_id": "envId", "env": "envId",
                 "min_turn": "minTurn", "max_turn": "maxTurn", "min_advantage": "minAdvantage",
                 "max_advantage": "maxAdvantage", "min_reward": "minReward", "max_reward": "maxReward"}


class NotFound(ApiError):
    """The server has no such run, step or group (HTTP 404); the message names what was asked."""


def _pandas(want: Optional[bool]):
    """pandas when it is wanted and installed; None for plain lists."""
    if want is False:
        return None
    try:
        import pandas
    except ImportError:
        if want:
            raise ImportError("pandas=True needs pandas installed (pip install pandas)") from None
        return None
    return pandas


def _table(rows: List[Dict[str, Any]], pandas: Optional[bool], columns: Optional[Sequence[str]] = None):
    """rows, or a DataFrame with `columns` first (all of them, even with no rows), then any others."""
    pd = _pandas(pandas)
    if pd is None:
        return rows
    first = list(columns or [])
    rest = [c for c in (rows[0] if rows else {}) if c not in first]
    return pd.DataFrame(rows, columns=[c for c in first if not rows or c in rows[0]] + rest)


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _unpack(b64: str, code: str, numpy: bool):
    """A packed export array: base64 of little-endian int64 ("q") or float64 ("d") numbers, as a
    numpy array or a list (the standard library's array module: one call, not a parse per number)."""
    raw = base64.b64decode(b64)
    if numpy:
        import numpy as np

        return np.frombuffer(raw, dtype="<i8" if code == "q" else "<f8")
    a = array.array(code)
    a.frombytes(raw)
    if sys.byteorder == "big":
        a.byteswap()
    return a.tolist()


def _joined(steps: List[Any], values: List[Any], numpy: bool) -> Tuple[Sequence[int], Sequence[float]]:
    """One key's blocks (in step order) as one (steps, values) pair."""
    if numpy:
        import numpy as np

        return (np.concatenate(steps) if steps else np.empty(0, "<i8")), (np.concatenate(values) if values else np.empty(0, "<f8"))
    if len(steps) == 1:
        return steps[0], values[0]
    return [x for b in steps for x in b], [x for b in values for x in b]


def _history_frame(pd: Any, series: Dict[str, Tuple[Sequence[int], Sequence[float]]], order: List[str]):
    """history's DataFrame: `_step` (int64, ascending) and a float64 column per key in `order`, NaN
    where a key has no point at a row's step."""
    import numpy as np

    if len(order) == 1 and order[0] in series:
        steps, values = series[order[0]]  # one key: its arrays are the columns (already in step order)
        return pd.DataFrame({"_step": np.asarray(steps, dtype="int64"), order[0]: np.asarray(values, dtype="float64")})
    cols = [pd.Series(np.asarray(series[k][1] if k in series else [], dtype="float64"),
                      index=pd.Index(np.asarray(series[k][0] if k in series else [], dtype="int64")), name=k) for k in order]
    df = pd.concat(cols, axis=1).sort_index() if cols else pd.DataFrame(index=pd.Index([], dtype="int64"))
    df.index = df.index.astype("int64")
    df.index.name = "_step"
    return df.reset_index()


class Api:
    """A TurnLens server to read from, like wandb.Api().

    url: the server (default $TURNLENS_URL, else http://127.0.0.1:3000).
    token: sent as a bearer token (default $TURNLENS_API_TOKEN, else $TURNLENS_READ_TOKEN); needed
      only when the server has TURNLENS_READ_TOKEN set.
    timeout: seconds to keep retrying a request the server cannot answer (network error, 5xx, 429)
      before raising turnlens.Unavailable.
    Not thread-safe: give each thread its own Api.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60.0):
        if token is None:
            token = os.environ.get("TURNLENS_API_TOKEN") or os.environ.get("TURNLENS_READ_TOKEN") or None
        self._transport = Transport(url, token)
        self.url = self._transport.url
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"<turnlens.Api {self.url}>"

    def __enter__(self) -> "Api":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection (a later call opens a new one)."""
        self._transport.close()

    # ---------------------------------------------------------------- HTTP

    def _get(self, path: str, query: Optional[Iterable[Tuple[str, Any]]] = None, what: str = "") -> Any:
        """GET /api/v1{path}?{query}; errors re-raised naming `what` was asked."""
        items = [(k, _query_value(v)) for k, v in (query or []) if v is not None]
        full = API + path + ("?" + urllib.parse.urlencode(items) if items else "")
        try:
            _, payload = self._transport.request("GET", full, deadline=time.monotonic() + self.timeout)
        except ApiError as e:
            cls = NotFound if e.status == 404 else ApiError
            err = cls(e.status, e.error, e.issues, "GET", full)
            err.args = (f"{what or full}: {e}",)
            raise err from None
        except Unavailable as e:
            raise Unavailable(f"{what or full}: {e}") from None
        return payload

    def _pages(self, path: str, item_key: str, page_size: int, query: Iterable[Tuple[str, Any]] = (),
               what: str = "") -> Iterator[Dict[str, Any]]:
        """Every item of a page/pageSize endpoint, each once (by id) even when rows arrive while paging."""
        seen = set()
        page = 1
        while True:
            r = self._get(path, [*query, ("page", page), ("pageSize", page_size)], what)
            items = r[item_key]
            for it in items:
                if it.get("id") not in seen:
                    seen.add(it.get("id"))
                    yield it
            if len(items) < page_size:
                return
            page += 1

    # ---------------------------------------------------------------- runs

    def run(self, run_id: str) -> "ApiRun":
        """One run by id, e.g. api.run("cmf3x..."); raises turnlens.api.NotFound naming the id when
        the server has none."""
        return ApiRun(self, self._get(f"/runs/{urllib.parse.quote(str(run_id), safe='')}", what=f"run {run_id!r}"))

    def runs(self, project: Optional[str] = None, filters: Optional[Mapping[str, Any]] = None,
             order: Optional[str] = None) -> List["ApiRun"]:
        """Runs matching every filter, all pages, e.g.
        api.runs(project="sokoban", filters={"status": "succeeded", "config.lr": ("<=", 1e-4)}, order="-metric:rollout/success_rate").

        filters: the server's run filters: q (name contains), status, kind, envId, estimator, tag,
          config (clauses like "lr<=1e-4;envConfig.size=6"); "config.<path>": value is a config
          clause too, equal to value, or (op, value) with op one of = != > >= < <= ~ (contains).
        order: a column (createdAt, name, status, envId, estimator) or metric:<key> (the metric's
          last value), "-" before it for descending, "+" or nothing ascending; default "-createdAt".
        """
        query: List[Tuple[str, Any]] = []
        clauses: List[str] = []
        for k, v in (filters or {}).items():
            if k.startswith("config."):
                clauses.append(_clause(k[len("config."):], v))
            elif k == "config" and isinstance(v, Mapping):
                clauses += [_clause(path, x) for path, x in v.items()]
            elif k == "config":
                clauses.append(str(v))
            else:
                query.append((FILTER_ALIASES.get(k, k), v))
        if clauses:
            query.append(("config", ";".join(clauses)))
        if project is not None:
            query.append(("project", project))
        if order:
            sort, direction = _order(order)
            query += [("sort", sort), ("order", direction)]
        what = f"runs(project={project!r}, filters={dict(filters or {})!r}, order={order!r})"
        return [ApiRun(self, r) for r in self._pages("/runs", "runs", RUNS_PAGE, query, what)]


    def search(self, runs: Optional[Sequence[Union[str, "ApiRun"]]] = None, project: Optional[str] = None,
               limit: Optional[int] = None, pandas: Optional[bool] = None, **query: Any):
        """Trajectories of some runs, a whole project (with runs: those of them in it) or, with
        neither, every run, that match every condition, across steps, in sort order, all pages
        (or the first `limit`), e.g.
        api.search(project="alfworld", text='"go to desk"', in_="action", outcome="failure",
                   min_turn=2, max_turn=2, advantage="negative", sort="return").

        The server's search parameters (GET /api/v1/search/trajectories), in snake_case or as it
        spells them: text (words and "quoted phrases"), in_ ("any", "observation", "action"),
        outcome ("success"/"failure"), min_length, max_length, min_return, max_return, step,
        min_step, max_step, env_id, task (group uid); one turn meets all of: min_turn, max_turn
        (0-based), advantage ("positive", "negative", "zero"), min_advantage, max_advantage,
        min_reward, max_reward, valid (bool), anchor; sort ("step", "return", "length"), order.
        Each row: id, runId, runName, step, groupId, task, envId, index, reward, success, length,
        matchedTurns (the turns that met the per-turn conditions, else those holding the text).
        """
        params: List[Tuple[str, Any]] = []
        if runs is not None:
            params.append(("runs", ",".join(r.id if isinstance(r, ApiRun) else str(r) for r in runs)))
        if project is not None:
            params.append(("project", project))
        for k, v in query.items():
            params.append((SEARCH_PARAMS.get(k, k), v))
        what = f"search(runs={runs!r}, project={project!r}, {query!r})"
        rows: List[Dict[str, Any]] = []
        cursor = None
        while limit is None or len(rows) < limit:
            page = self._get("/search/trajectories", [*params, ("pageSize", 200), ("cursor", cursor)], what)
            rows += page["trajectories"]
            cursor = page["next"]
            if not cursor:
                break
        return _table(rows[:limit] if limit is not None else rows, pandas,
                      ["id", "runId", "runName", "step", "groupId", "task", "envId", "index", "reward", "success", "length", "matchedTurns"])

    # ---------------------------------------------------------------- alerts and failure clusters

    def alerts(self, run: Optional[Union[str, "ApiRun"]] = None, limit: int = 50) -> List[Dict[str, Any]]:
        """Alerts raised by the projects' rules, newest first: of every run, or of one."""
        run_id = run.id if isinstance(run, ApiRun) else run
        return self._get("/alerts", [("runId", run_id), ("limit", limit)], f"alerts(run={run_id!r})")["alerts"]

    def failure_clusters(self, run: Union[str, "ApiRun"], start: Optional[int] = None, end: Optional[int] = None,
                         max_clusters: int = 6) -> Dict[str, Any]:
        """The failed trajectories of a step range (default: the whole run) grouped by their actions."""
        run_id = run.id if isinstance(run, ApiRun) else run
        query = [("from", start), ("to", end), ("maxClusters", max_clusters)]
        return self._get(f"/runs/{urllib.parse.quote(run_id, safe='')}/failure-clusters", query,
                         f"failure_clusters({run_id!r})")
    # ---------------------------------------------------------------- labels and task timelines

    def labels(self, project: str, pandas: Optional[bool] = None):
        """A project's label set: id, name, position (its digit key in the trajectory view), uses."""
        r = self._get("/labels", [("project", project)], what=f"labels of project {project!r}")
        return _table(r["labels"], pandas, ["id", "name", "position", "uses"])

    def task_timeline(self, runs: Sequence[Union[str, "ApiRun"]], task: Optional[str] = None, seed: Optional[int] = None,
                      env_id: Optional[str] = None, pandas: Optional[bool] = None, prompt: Optional[str] = None):
        """One task (a group uid; a task seed with env_id; or a prompt: the trajectories whose first
        observation is that text, compared trimmed, which finds a verl/TRL task whose uid is new every
        step) at every step of some runs, one row per trajectory: runId, runName, step, uid, id, index,
        success, reward, length, meanAdvantage."""
        ids = ",".join(r.id if isinstance(r, ApiRun) else str(r) for r in runs)
        shown = prompt[:40] + "..." if prompt and len(prompt) > 40 else prompt
        r = self._get("/tasks/timeline", [("runs", ids), ("task", task), ("seed", seed), ("envId", env_id), ("prompt", prompt)],
                      what=f"task_timeline(runs={ids!r}, task={task!r}, seed={seed!r}, prompt={shown!r})")
        rows = [{"runId": run["id"], "runName": run["name"], "step": s["step"], "uid": s["uid"], **t}
                for run in r["runs"] for s in run["steps"] for t in s["trajectories"]]
        return _table(rows, pandas, ["runId", "runName", "step", "uid", "id", "index", "success", "reward", "length", "meanAdvantage"])

    def trajectory_diff(self, a: str, b: str) -> Dict[str, Any]:
        """Two trajectories side by side: {a, b, turns: [{index, a, b, differs}], differing}; a turn
        differs when the actions differ or only one trajectory has it; each side's turn carries its advantage."""
        return self._get("/trajectories/diff", [("a", a), ("b", b)], what=f"trajectory_diff({a!r}, {b!r})")


def _clause(path: str, v: Any) -> str:
    """A config filter clause: `path=value`, or from (op, value) `path op value`."""
    op, value = v if isinstance(v, tuple) else ("=", v)
    text = json.dumps(value) if value is None or isinstance(value, bool) else value if isinstance(value, str) else repr(value)
    return f"{path}{op}{text}"


def _order(order: str) -> Tuple[str, str]:
    direction = "desc" if order.startswith("-") else "asc"
    name = order.lstrip("+-")
    for prefix in ("summary.", "summary_metrics."):
        if name.startswith(prefix):
            name = "metric:" + name[len(prefix):]
    if not name.startswith("metric:"):
        name = RUN_COLUMNS.get(name.lower(), name)
    return name, direction


class ApiRun:
    """A stored run as the server answered it (`api.run(id)` again for fresh values).

    id, name, project, status, config (as logged), summary ({key: last finite value}), tags,
    env_id, estimator, created_at; `raw` is the server's whole answer.
    """

    def __init__(self, api: Api, raw: Dict[str, Any]):
        self._api = api
        self.raw = raw
        self.id: str = raw["id"]
        self.name: str = raw["name"]
        self.project: str = raw.get("project", "")
        self.status: str = raw.get("status", "")
        self.config: Any = raw.get("config")
        self.summary: Dict[str, float] = raw.get("summary") or {}
        self.tags: List[str] = raw.get("tags") or []
        self.env_id: Optional[str] = raw.get("envId")
        self.estimator: Optional[str] = raw.get("estimator")
        self.created_at: Optional[str] = raw.get("createdAt")

    def __repr__(self) -> str:
        return f"<turnlens run {self.id} {self.name!r} ({self.status})>"

    @property
    def _path(self) -> str:
        return f"/runs/{urllib.parse.quote(self.id, safe='')}"

    # ---------------------------------------------------------------- metrics

    def keys(self) -> List[str]:
        """The run's metric keys (those with at least one finite value)."""
        return [k["key"] for k in self._api._get(f"{self._path}/metrics", what=f"run {self.id!r} metric keys")["keys"]]

    def history(self, keys: Union[None, str, Sequence[str]] = None, samples: Optional[int] = None,
                pandas: Optional[bool] = None):
        """The run's metrics, one row per step: `_step` and one column per key.

        keys: a key or keys (default: all). samples: None (default) returns every stored point (the
        full-resolution export); a number (>= 10) asks the server's downsampled series, about that
        many points per key (min/max of each bucket, first and last kept). A non-finite value logged
        (NaN, ±Inf) is in the table as that float; a step where a key was not logged is NaN in a
        DataFrame and absent from that row's dict in the list.
        """
        if isinstance(keys, str):
            keys = [keys]
        pd = _pandas(pandas)
        series = self._full_history(keys, pd is not None) if samples is None else self._sampled_history(keys, samples)
        order = list(keys) if keys else sorted(series)
        if pd is not None:
            return _history_frame(pd, series, order)
        by_step: Dict[int, Dict[str, Any]] = {}
        for k in order:
            steps, values = series.get(k, ((), ()))
            for step, value in zip(steps, values):
                row = by_step.get(step)
                if row is None:
                    row = by_step[step] = {"_step": step}
                row[k] = value
        return [by_step[s] for s in sorted(by_step)]

    def _full_history(self, keys: Optional[Sequence[str]], numpy: bool = False) -> Dict[str, Tuple[Sequence[int], Sequence[float]]]:
        """Each key's (steps, values) from the export in its packed form: numpy arrays when `numpy`,
        else lists. A server without the packed form gets asked for the columnar one."""
        parts: Dict[str, Tuple[List[Any], List[Any]]] = {}
        chunks: List[Optional[Sequence[str]]] = [None] if not keys else [
            keys[i:i + EXPORT_KEYS] for i in range(0, len(keys), EXPORT_KEYS)]
        for chunk in chunks:
            what = f"run {self.id!r} history"
            names = [("key", k) for k in chunk or []]
            try:
                blocks = self._api._get(f"{self._path}/metrics/export", [("format", "packed"), *names], what=what)
            except ApiError as e:
                if e.status != 400 or not any(i.get("path") == "query.format" for i in e.issues if isinstance(i, dict)):
                    raise
                blocks = self._api._get(f"{self._path}/metrics/export", [("format", "columnar"), *names], what=what)
            for b in blocks:
                steps, values = parts.setdefault(b["key"], ([], []))
                if isinstance(b["steps"], str):
                    steps.append(_unpack(b["steps"], "q", numpy))
                    values.append(_unpack(b["values"], "d", numpy))
                else:  # columnar: numbers, non-finite values as the texts NaN, Infinity, -Infinity
                    steps.append([int(x) for x in b["steps"]])
                    values.append([float(x) for x in b["values"]])
        return {k: _joined(steps, values, numpy) for k, (steps, values) in parts.items()}

    def _sampled_history(self, keys: Optional[Sequence[str]], samples: int) -> Dict[str, Tuple[List[int], List[float]]]:
        if not isinstance(samples, int) or samples < 10:
            raise ValueError(f"samples: expected a whole number of at least 10, got {samples!r}")
        out: Dict[str, Tuple[List[int], List[float]]] = {}
        for k in keys or self.keys():
            s = self._api._get(f"{self._path}/metrics/series", [("key", k), ("maxPoints", samples)],
                               what=f"run {self.id!r} history of {k!r}")
            points = {int(step): float(v) for step, v in zip(s["steps"], s["values"])}
            for nf in s.get("nonFinite") or []:
                points[int(nf["step"])] = float(nf["value"])
            ordered = sorted(points.items())
            out[k] = ([p[0] for p in ordered], [p[1] for p in ordered])
        return out

    # ---------------------------------------------------------------- rollouts

    def steps(self, pandas: Optional[bool] = None):
        """The run's rollout steps in step order: step, estimator, groups, trajectories, successRate,
        meanReward, createdAt, id."""
        rows = list(self._api._pages(f"{self._path}/steps", "steps", STEPS_PAGE, what=f"run {self.id!r} steps"))
        rows.sort(key=lambda r: r["step"])
        return _table(rows, pandas, ["step", "estimator", "groups", "trajectories", "successRate", "meanReward", "createdAt", "id"])

    def groups(self, step: int, pandas: Optional[bool] = None):
        """The task groups of a step: id, uid, envId, taskSeed, trajectories, successRate, meanReward."""
        r = self._api._get(f"{self._path}/steps/{int(step)}/groups", what=f"run {self.id!r} step {step} groups")
        return _table(r["groups"], pandas, ["id", "uid", "envId", "taskSeed", "step", "trajectories", "successRate", "meanReward"])

    def _group_id(self, step: Optional[int], group: Optional[str]) -> Optional[str]:
        """A group's id from its id or, with a step, its uid (e.g. "task-0")."""
        if group is None or step is None:
            return group
        groups = self.groups(step, pandas=False)
        for g in groups:
            if g["id"] == group or g["uid"] == group:
                return g["id"]
        known = ", ".join(repr(g["uid"]) for g in groups[:10]) + (", ..." if len(groups) > 10 else "")
        raise NotFound(404, f"run {self.id}: step {step} has no group {group!r} (uids: {known or 'none'})",
                       method="GET", path=f"{API}{self._path}/steps/{step}/groups")

    def _trajectory_rows(self, step: Optional[int], success: Optional[bool], group: Optional[str],
                         filters: Mapping[str, Any]) -> List[Dict[str, Any]]:
        query: List[Tuple[str, Any]] = [("step", step), ("groupId", self._group_id(step, group)), ("success", success)]
        query += list(filters.items())
        asked = ", ".join(f"{k}={v!r}" for k, v in [("step", step), ("group", group), ("success", success), *filters.items()]
                          if v is not None)
        rows = list(self._api._pages(f"{self._path}/trajectories", "trajectories", TRAJECTORIES_PAGE, query,
                                     what=f"run {self.id!r} trajectories({asked})"))
        rows.sort(key=lambda r: (r["step"], r["uid"], r["index"]))
        return rows

    def trajectories(self, step: Optional[int] = None, success: Optional[bool] = None, group: Optional[str] = None,
                     pandas: Optional[bool] = None, **filters: Any):
        """Trajectories (without their turns) by step, then group uid, then index: id, step, uid,
        groupId, index, reward, success, length, truncated.

        step, success: filters; group: a group id, or with step its uid; label: a label's name, only
        trajectories carrying it (on themselves or a turn); other keywords are sent as the server's
        query parameters (e.g. groupId=...).
        """
        rows = self._trajectory_rows(step, success, group, filters)
        return _table(rows, pandas, ["id", "step", "uid", "groupId", "index", "reward", "success", "length", "truncated"])

    def labels(self, label: Optional[str] = None, pandas: Optional[bool] = None):
        """This run's labels (the JSON Lines export), in step order: step, task, index, turn (None:
        the whole trajectory), label, note, trajectoryId, createdAt; label: only that one."""
        body = self._api._get(f"{self._path}/labels/export", [("label", label)], what=f"run {self.id!r} labels")
        rows = [body] if isinstance(body, dict) else [json.loads(x) for x in (body or "").splitlines() if x.strip()]
        return _table(rows, pandas, ["step", "task", "index", "turn", "label", "note", "trajectoryId", "createdAt"])

    def search(self, limit: Optional[int] = None, pandas: Optional[bool] = None, **query: Any):
        """This run's trajectories by text, outcome, length, return, step, task and per-turn
        conditions (see Api.search), e.g. run.search(text="laptop", in_="action", advantage="negative")."""
        return self._api.search(runs=[self.id], limit=limit, pandas=pandas, **query)

    def turns(self, step: Optional[int] = None, success: Optional[bool] = None, group: Optional[str] = None,
              pandas: Optional[bool] = None, **filters: Any):
        """Every turn of the trajectories that match (as trajectories() takes them; no filter: the
        whole run), in write order, read through the turns cursor page by page until all are in.

        Each row is the server's turn (seq, trajectoryId, index = position in its trajectory,
        observation, action, reward, valid, done, anchor, agent, tokenCount, logprob, entropy,
        advantage, info, tokens) with its trajectory's step, uid, groupId and trajectoryIndex.
        Trajectories stored after the call began are left out.
        """
        trajs = self._trajectory_rows(step, success, group, filters)
        meta = {t["id"]: t for t in trajs}
        want = sum(t["length"] for t in trajs)
        got: Dict[int, Dict[str, Any]] = {}
        start = self._turns_start(trajs, step is not None and not filters and success is None and group is None)
        self._scan_turns(start, meta, want, got)
        if len(got) < want and start > -1:  # the hint was wrong: read from the first turn
            self._scan_turns(-1, meta, want, got)
        rows = [got[s] for s in sorted(got)]
        return _table(rows, pandas, ["step", "uid", "groupId", "trajectoryIndex", "seq", "trajectoryId", "index",
                                     "observation", "action", "reward", "valid", "done", "anchor", "agent",
                                     "tokenCount", "logprob", "entropy", "advantage", "info", "tokens"])

    def _turns_start(self, trajs: List[Dict[str, Any]], whole_step: bool) -> int:
        """Where to start the cursor. A step's turns are stored together (consecutive seq), so the
        turns of one step start at most its turn count before any of its trajectories' first turn."""
        steps = {t["step"] for t in trajs}
        if len(steps) != 1:
            return -1
        if not whole_step:
            trajs = self._trajectory_rows(next(iter(steps)), None, None, {})
        total = sum(t["length"] for t in trajs)
        probe = min(trajs, key=lambda t: t["length"])
        detail = self._api._get(f"/trajectories/{urllib.parse.quote(probe['id'], safe='')}",
                                what=f"trajectory {probe['id']!r} of run {self.id!r}")
        if not detail.get("turns"):
            return -1
        first = detail["turns"][0]["seq"]
        return max(-1, first - (total - probe["length"]) - 1)

    def _scan_turns(self, after: int, meta: Mapping[str, Dict[str, Any]], want: int, got: Dict[int, Dict[str, Any]]) -> None:
        while len(got) < want:
            r = self._api._get(f"{self._path}/turns", [("after", after), ("limit", TURNS_PAGE)],
                               what=f"run {self.id!r} turns after {after}")
            for u in r["turns"]:
                t = meta.get(u["trajectoryId"])
                if t is not None:
                    got[u["seq"]] = {"step": t["step"], "uid": t["uid"], "groupId": t["groupId"],
                                     "trajectoryIndex": t["index"], **u}
            if r["next"] is None or not r["turns"]:
                return
            after = r["next"]

    # ---------------------------------------------------------------- credit

    def credit(self, step: int, group: str, estimator: Optional[str] = None,
               params: Optional[Mapping[str, Any]] = None) -> "Credit":
        """A task group's per-turn advantages at a step: as stored (estimator None or "stored"), or
        recomputed over the step's batch with another estimator (e.g. "grpo", "gigpo") and params
        (default: the training params for the training estimator, else the estimator's defaults).

        group: the group's uid (e.g. "task-0") or id.
        """
        gid = self._group_id(step, group)
        query = [("estimator", estimator), ("params", json.dumps(dict(params), allow_nan=False) if params is not None else None)]
        what = f"run {self.id!r} credit(step={step}, group={group!r}, estimator={estimator!r})"
        raw = self._api._get(f"{self._path}/steps/{int(step)}/groups/{urllib.parse.quote(str(gid), safe='')}/credit", query, what)
        return Credit(raw)


class Credit:
    """A group's credit as the server answered it (`raw`): estimator and params shown, source
    ("stored" or "recomputed"), trained ({estimator, params} stored with the step), trajectories,
    and trajectory x turn lists advantages (None where none), rewards, valid, anchor_group."""

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw
        self.estimator: Optional[str] = raw.get("estimator")
        self.params: Optional[Dict[str, Any]] = raw.get("params")
        self.source: str = raw.get("source", "")
        self.trained: Dict[str, Any] = raw.get("trained") or {}
        self.trajectories: List[Dict[str, Any]] = raw.get("trajectories") or []
        self.advantages: List[List[Optional[float]]] = raw.get("advantages") or []
        self.rewards: List[List[float]] = raw.get("rewards") or []
        self.valid: List[List[bool]] = raw.get("valid") or []
        self.anchor_group: List[List[Optional[int]]] = raw.get("anchorGroup") or []
        self.diagnostics = raw.get("diagnostics")

    def __repr__(self) -> str:
        return f"<turnlens credit {self.source} estimator={self.estimator!r} {len(self.advantages)} trajectories>"

    def table(self, pandas: Optional[bool] = None):
        """One row per turn: trajectoryId, trajectoryIndex, success, turn, advantage, reward, valid, anchorGroup."""
        rows = []
        for i, t in enumerate(self.trajectories):
            advs = self.advantages[i] if i < len(self.advantages) else []
            for k, adv in enumerate(advs):
                rows.append({"trajectoryId": t["id"], "trajectoryIndex": t["index"], "success": t["success"], "turn": k,
                             "advantage": adv,
                             "reward": self.rewards[i][k], "valid": self.valid[i][k],
                             "anchorGroup": self.anchor_group[i][k] if i < len(self.anchor_group) else None})
        return _table(rows, pandas, ["trajectoryId", "trajectoryIndex", "success", "turn", "advantage", "reward", "valid", "anchorGroup"])
