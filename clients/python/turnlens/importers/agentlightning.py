"""Agent Lightning's store server (LightningStoreServer, `agl store`; what its trainer and runners share), read
over its HTTP API: `turnlens import agentlightning http://HOST:PORT`.

Routes read (agentlightning 0.3 store/client_server.py, under /v1/agl): GET /rollouts (paginated
{items, total}; each {rollout_id, input, mode, resources_id, status, start_time, end_time, metadata}),
GET /resources (each {resources_id, create_time, version}) and GET /spans?rollout_id=R&attempt_id=latest
(the latest attempt's OpenTelemetry spans {name, attributes, sequence_id, span_id, parent_id, times}),
the spans Agent Lightning's own verl daemon turns into training triplets (verl/daemon.py
`_validate_data_v1`). Agent Lightning 1.0 (Python >= 3.12) replaced this store with a rollout events API
(/api/rollouts, /api/rollouts/{id}/events: model_request and reward events), which this importer does not read.

Each finished rollout (status succeeded or failed) is a trajectory:
- turns: one per LLM call span (name matching `openai.chat.completion`, the adapter's default
  `llm_call_match`, or any span with `gen_ai.completion` attributes), in sequence order; the prompt
  messages (`gen_ai.prompt.N.role/content`) not already shown to an earlier call are the observation,
  the completion (`gen_ai.completion.0.content`, tool calls as JSON) the action, as the chat importer
  renders a conversation; the response's token ids (`response_token_ids`) counted as its tokenCount, the
  prompt's as info.promptTokens.
- reward: the last reward span's primary value (`agentlightning.reward.0.value`, or the v0.2 annotation's
  `reward`), as the daemon's `final_reward`; a rollout without one is rejected (nothing trained on it).
- group: `metadata.data_id` (the daemon enqueues each sample train_rollout_n times under one data_id,
  which becomes verl's uid); without one, the rollout's input.
- step: the training step whose resources (the policy the daemon published with add_resources before
  enqueuing that step's rollouts) the rollout ran with: train rollouts' resources numbered 1, 2, ... by
  creation time; `metadata.step` wins where the runner set it. Validation rollouts (mode val/test) are
  reported, not imported. A step is stored once, whole: a step with a rollout still queued or running is
  left for a later import (reported as waiting).
Every span of a trajectory is kept in its last turn's info (`spans`: id, parent, name, times, attributes)
with the rollout's ids under `agentlightning`. No advantages: the daemon's verl computes those.
"""

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

from .. import shapes
from . import chat
from .base import Source

_PREFIX = "/v1/agl"
_LLM_CALL = re.compile(r"openai\.chat\.completion")
_DONE = ("succeeded", "failed")
_EVAL = ("val", "test")
PAGE = 500


class StoreUnreachable(ValueError):
    """The URL does not answer as an Agent Lightning store."""


def is_url(path: str) -> bool:
    return path.startswith(("http://", "https://"))


def _get(base: str, route: str, params: Optional[Dict[str, Any]] = None, timeout: float = 30.0) -> Any:
    url = base.rstrip("/") + _PREFIX + route + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise StoreUnreachable(f"{url}: the server answered HTTP {e.code}; the agentlightning importer reads the store API of "
                               "agentlightning 0.3 (LightningStoreServer, /v1/agl/...), not 1.0's rollout events API (/api/rollouts)") from None
    except (urllib.error.URLError, OSError) as e:
        raise StoreUnreachable(f"{url}: no Agent Lightning store answers ({getattr(e, 'reason', e)})") from None
    except ValueError:
        raise StoreUnreachable(f"{url}: the answer is not JSON (not an Agent Lightning store)") from None


def _pages(base: str, route: str, params: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    while True:
        page = _get(base, route, {**(params or {}), "limit": PAGE, "offset": len(out)})
        if not isinstance(page, dict) or not isinstance(page.get("items"), list):
            raise StoreUnreachable(f"{base}{_PREFIX}{route}: expected a paginated result {{items, total}}")
        out.extend(page["items"])
        if len(page["items"]) < PAGE or (isinstance(page.get("total"), int) and len(out) >= page["total"]):
            return out


def _unflatten(attrs: Dict[str, Any], prefix: str) -> Any:
    """OpenTelemetry flattens nested values into dotted keys (gen_ai.prompt.0.content); this rebuilds them (lists where
    the keys are 0..n-1), as Agent Lightning's filter_and_unflatten_attributes does."""
    root: Dict[str, Any] = {}
    for k, v in attrs.items():
        if not k.startswith(prefix + "."):
            continue
        node = root
        parts = k[len(prefix) + 1:].split(".")
        for p in parts[:-1]:
            nxt = node.get(p)
            if not isinstance(nxt, dict):
                nxt = node[p] = {}
            node = nxt
        node[parts[-1]] = v

    def lists(n: Any) -> Any:
        if not isinstance(n, dict):
            return n
        n = {k: lists(v) for k, v in n.items()}
        if n and all(k.isdigit() for k in n) and sorted(int(k) for k in n) == list(range(len(n))):
            return [n[str(i)] for i in range(len(n))]
        return n

    return lists(root) if root else None


def reward_of(attrs: Dict[str, Any], name: str) -> Optional[float]:
    dims = _unflatten(attrs, "agentlightning.reward")
    if isinstance(dims, list) and dims and isinstance(dims[0], dict) and isinstance(dims[0].get("value"), (int, float)):
        return float(dims[0]["value"])
    if name == "agentlightning.annotation" and isinstance(attrs.get("reward"), (int, float)):
        return float(attrs["reward"])
    return None


def _is_llm_call(span: Dict[str, Any]) -> bool:
    attrs = span.get("attributes") or {}
    return bool(_LLM_CALL.search(span.get("name") or "")) or any(k.startswith("gen_ai.completion.") for k in attrs)


def _ids(v: Any) -> int:
    if isinstance(v, str):  # some tracers store token ids as a string literal
        try:
            v = json.loads(v)
        except ValueError:
            return 0
    return len(v) if isinstance(v, (list, tuple)) else 0


def trajectory(rollout: Dict[str, Any], spans: List[Dict[str, Any]], where: str) -> Tuple[Dict[str, Any], List[str]]:
    """(trajectory body, warnings) of one rollout and its latest attempt's spans; ShapeError when it has no LLM call or reward."""
    spans = sorted(spans, key=lambda s: (s.get("sequence_id") or 0, s.get("start_time") or 0))
    messages: List[Dict[str, Any]] = []
    shown = 0  # prompt messages an earlier call already had
    reward = None
    tokens: List[Tuple[int, int]] = []
    for s in spans:
        attrs = s.get("attributes") or {}
        r = reward_of(attrs, s.get("name") or "")
        if r is not None:
            reward = r
            continue
        if not _is_llm_call(s):
            continue
        prompt = _unflatten(attrs, "gen_ai.prompt")
        prompt = prompt if isinstance(prompt, list) else []
        new = prompt[shown:] if len(prompt) >= shown else prompt
        messages.extend({"role": str(m.get("role") or "user"), "content": m.get("content")} for m in new if isinstance(m, dict))
        completion = _unflatten(attrs, "gen_ai.completion")
        first = completion[0] if isinstance(completion, list) and completion and isinstance(completion[0], dict) else {}
        msg: Dict[str, Any] = {"role": "assistant", "content": first.get("content")}
        if first.get("tool_calls"):
            msg["tool_calls"] = first["tool_calls"]
        messages.append(msg)
        shown = len(prompt) + 1
        tokens.append((_ids(attrs.get("prompt_token_ids")), _ids(attrs.get("response_token_ids"))))
    if not tokens:
        raise shapes.ShapeError(f"no LLM call span (name matching {_LLM_CALL.pattern!r} or gen_ai.completion attributes) "
                                f"among its {len(spans)} span(s)")
    if reward is None:
        raise shapes.ShapeError("no reward span (agentlightning.reward.0.value): the daemon trains on none")
    turns, _ = chat.turns_of(messages, reward, where)
    for t, (p, r) in zip(turns, tokens):
        if r:
            t["tokenCount"] = r
        if p:
            t.setdefault("info", {})["promptTokens"] = p
    info = turns[-1].setdefault("info", {})
    info["agentlightning"] = {k: rollout.get(k) for k in ("rollout_id", "status", "mode", "resources_id") if rollout.get(k) is not None}
    attempt = rollout.get("attempt") or {}
    if attempt.get("attempt_id"):
        info["agentlightning"]["attempt_id"] = attempt["attempt_id"]
    info["spans"] = [{"id": s.get("span_id"), "parentId": s.get("parent_id"), "name": s.get("name"),
                      "start": s.get("start_time"), "end": s.get("end_time"), "attributes": s.get("attributes") or {}} for s in spans]
    body = shapes.trajectory_body({"turns": turns, "reward": reward, "success": rollout.get("status") == "succeeded" and reward > 0}, where)
    return body, []


def read(path: str, env_id: str = "external") -> List[Source]:
    """an Agent Lightning store server (http://HOST:PORT of LightningStoreServer): each finished rollout, its spans as turns, its reward"""
    base = path.rstrip("/")
    rollouts = _pages(base, "/rollouts")
    resources = sorted(_pages(base, "/resources"), key=lambda r: (r.get("create_time") or 0, r.get("version") or 0))
    src = Source(name=f"agentlightning {urllib.parse.urlsplit(base).netloc}", config={"agentlightning": {"store": base}},
                 key=base, env_id=env_id)
    train_resources = {r.get("resources_id") for r in rollouts if r.get("mode") not in _EVAL}
    step_of = {}
    for r in resources:
        if r.get("resources_id") in train_resources:
            step_of[r["resources_id"]] = len(step_of) + 1
    steps: Dict[int, Dict[str, List[Dict[str, Any]]]] = {}
    waiting: Dict[int, List[str]] = {}  # step -> its rollouts still queued or running
    for ro in sorted(rollouts, key=lambda r: (r.get("start_time") or 0, r.get("rollout_id") or "")):
        rid = str(ro.get("rollout_id"))
        where = f"rollout {rid}"
        if ro.get("mode") in _EVAL:
            if ro.get("status") in _DONE:
                src.reject(where, f"a {ro['mode']} rollout (validation, not a training step): not imported")
            continue
        meta = ro.get("metadata") if isinstance(ro.get("metadata"), dict) else {}
        try:
            step = shapes.to_step(meta["step"], "metadata.step") if meta.get("step") is not None else step_of.get(ro.get("resources_id"), 0)
            if ro.get("status") not in _DONE:
                # a step is stored once, whole: it waits for its last rollout (the daemon enqueues a step's rollouts together)
                waiting.setdefault(step, []).append(rid)
                continue
            spans = _pages(base, "/spans", {"rollout_id": rid, "attempt_id": "latest"})
            traj, _ = trajectory(ro, spans, where)
        except shapes.ShapeError as e:
            src.reject(where, str(e))
            continue
        gid = meta.get("data_id")
        if gid is None:
            gid = "input-" + hashlib.sha1(json.dumps(ro.get("input"), sort_keys=True, default=str).encode()).hexdigest()[:16]
        steps.setdefault(step, {}).setdefault(str(gid), []).append(traj)
    for step, rids in sorted(waiting.items()):
        src.reject(f"step {step}", f"{len(rids)} rollout(s) not finished (e.g. {rids[0]}): the step is imported by an "
                                   "import after they have (a step is stored once, whole)")
        steps.pop(step, None)
    for step in sorted(steps):
        groups = shapes.groups_body(steps[step], env_id)
        src.add_step({"step": step, "groups": groups}, sum(len(g["trajectories"]) for g in groups), f"step {step}")
    times = [t for r in rollouts for t in (r.get("start_time"), r.get("end_time")) if isinstance(t, (int, float)) and t > 0]
    if times:
        src.started_at, src.finished_at = min(times), max(times)
    return [src]


read.reads_url = True  # PATH is the store's URL, not a file
