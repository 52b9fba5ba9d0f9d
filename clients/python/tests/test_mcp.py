"""`turnlens mcp` driven by the official MCP Python SDK as the client (tests/requirements-mcp.txt):
the stdio handshake, the tool list with input schemas, each tool against a run logged to a real
server, and bad calls answered with isError while the server keeps serving."""

import asyncio
import json
import os
import secrets
import sys

import pytest

import turnlens

from conftest import CLIENT

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

TOOLS = {
    "list_runs",
    "get_run",
    "get_history",
    "list_steps",
    "search_trajectories",
    "get_trajectory_turns",
    "get_credit",
}


@pytest.fixture(scope="module")
def logged(server, tmp_path_factory):
    """One run with metrics (a NaN among them) and one rollout step of two task groups."""
    project = f"mcp-{secrets.token_hex(4)}"
    name = f"mcp-run-{secrets.token_hex(3)}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TURNLENS_DIR", str(tmp_path_factory.mktemp("home")))
        run = turnlens.init(
            project=project, name=name, config={"lr": 3e-4}, url=server.url, env_id="sokoban", estimator="grpo"
        )
        for step in range(30):
            run.log(
                {"train/reward": step / 10, "train/loss": float("nan") if step == 5 else 1.0 / (step + 1)}, step=step
            )
        groups = {
            f"task-{g}": [
                {
                    "success": t == 0,
                    "turns": [
                        {
                            "observation": f"room {g}-{t}-{k}",
                            "action": "push the box left" if t == 0 else "wait",
                            "reward": 1.0 if (t == 0 and k == 1) else 0.0,
                            "advantage": 0.5 if t == 0 else -0.5,
                        }
                        for k in range(2)
                    ],
                }
                for t in range(2)
            ]
            for g in range(2)
        }
        run.log_rollouts(3, groups)
        run.finish()
        assert run.rejected == []
    return {"project": project, "name": name, "id": run.id, "url": server.url}


async def session_calls(url, calls):
    """Starts `python -m turnlens mcp`, lists the tools, makes each call; returns (tools, results)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "turnlens", "mcp"],
        env={**os.environ, "TURNLENS_URL": url, "PYTHONPATH": str(CLIENT)},
        cwd=str(CLIENT),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.serverInfo.name == "turnlens"
            tools = (await session.list_tools()).tools
            results = []
            for name, args in calls:
                r = await asyncio.wait_for(session.call_tool(name, args), 30)
                results.append((r.isError, r.content[0].text))
            return tools, results


def test_mcp_tools_read_a_logged_run(logged):
    rid = logged["id"]
    calls = [
        ("list_runs", {"project": logged["project"], "name": logged["name"][-6:], "limit": 5}),
        ("get_run", {"run_id": rid}),
        ("get_history", {"run_id": rid, "keys": ["train/reward", "train/loss"], "max_points": 0}),
        ("list_steps", {"run_id": rid}),
        ("list_steps", {"run_id": rid, "step": 3}),
        ("search_trajectories", {"run_id": rid, "text": "push", "outcome": "success"}),
        ("get_trajectory_turns", {"run_id": rid, "step": 3, "group": "task-1"}),
        ("get_credit", {"run_id": rid, "step": 3, "group": "task-0"}),
        ("get_credit", {"run_id": rid, "step": 3, "group": "task-0", "estimator": "grpo"}),
        # bad calls: answered with isError and the API's message, and the session goes on
        ("get_run", {"run_id": "no-such-run"}),
        ("get_credit", {"run_id": rid, "step": 3}),
        ("get_trajectory_turns", {"run_id": rid, "step": "three"}),
        ("get_credit", {"run_id": rid, "step": 3, "group": "task-9"}),
        ("no_such_tool", {}),
        ("get_history", {"run_id": rid, "max_points": 5}),
        ("list_runs", {"project": logged["project"]}),
    ]
    tools, results = asyncio.run(session_calls(logged["url"], calls))

    assert TOOLS <= {t.name for t in tools} and len(tools) >= 6
    for t in tools:
        assert t.description and t.inputSchema["type"] == "object", t.name
    by_name = {t.name: t for t in tools}
    assert by_name["get_credit"].inputSchema["required"] == ["run_id", "step", "group"]

    ok = [(err, json.loads(text) if not err else text) for err, text in results[:9]]
    assert [err for err, _ in ok] == [False] * 9, results[:9]
    listed, run, history, steps, groups, found, turns, stored, grpo = (v for _, v in ok)

    assert [r["name"] for r in listed["runs"]] == [logged["name"]] and listed["runs"][0]["id"] == rid
    assert (
        run["config"] == {"lr": 3e-4}
        and run["status"] == "succeeded"
        and run["summary"]["train/reward"] == pytest.approx(2.9)
    )
    assert set(run["metricKeys"]) == {"train/reward", "train/loss"}
    assert history["series"]["train/reward"]["steps"] == list(range(30))
    assert history["series"]["train/reward"]["values"][10] == pytest.approx(1.0)
    assert history["series"]["train/loss"]["values"][5] == "NaN"  # compact JSON stays valid JSON
    assert [s["step"] for s in steps["steps"]] == [3] and steps["steps"][0]["trajectories"] == 4
    assert sorted(g["uid"] for g in groups["groups"]) == ["task-0", "task-1"]
    assert found["count"] == 2 and {t["task"] for t in found["trajectories"]} == {"task-0", "task-1"}
    assert all(t["success"] for t in found["trajectories"])
    assert turns["total"] == 4 and {t["uid"] for t in turns["turns"]} == {"task-1"}
    assert sorted(t["observation"] for t in turns["turns"]) == ["room 1-0-0", "room 1-0-1", "room 1-1-0", "room 1-1-1"]
    assert stored["source"] == "stored" and stored["advantages"] == [[0.5, 0.5], [-0.5, -0.5]]
    assert grpo["source"] == "recomputed" and grpo["estimator"] == "grpo"
    assert grpo["advantages"][0][0] > 0 > grpo["advantages"][1][0]

    bad = results[9:15]
    assert all(err for err, _ in bad), bad
    assert "no-such-run" in bad[0][1]
    assert bad[1][1] == "arguments.group: required"
    assert bad[2][1].startswith("arguments.step: expected integer")
    assert "task-9" in bad[3][1]
    assert "unknown tool 'no_such_tool'" in bad[4][1]
    assert bad[5][1] == "arguments.max_points: expected 0 (every point) or at least 10, got 5"
    after = results[15]
    assert not after[0] and json.loads(after[1])["runs"][0]["id"] == rid


def test_mcp_alert_and_cluster_tools(server, tmp_path):
    """list_alerts finds the default entropy rule's alert (entropy 1.0 to 0.1 at step 40: step 42);
    get_failure_clusters groups a step's failures by their actions."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TURNLENS_DIR", str(tmp_path))
        run = turnlens.init(
            project=f"mcp-alerts-{secrets.token_hex(4)}", name="collapse", url=server.url, estimator="grpo"
        )
        for step in range(50):
            run.log({"actor/entropy": 0.1 if step >= 40 else 1.0}, step=step)
        groups = {
            f"task-{g}": [
                {"success": False, "turns": [{"observation": "room", "action": a, "reward": 0.0} for a in acts]}
                for acts in (
                    ["look", "look", "look"],
                    ["look", "look", "look"],
                    ["open door", "go north", "open door"],
                    ["open door", "go north", "open door"],
                )
            ]
            for g in range(2)
        }
        run.log_rollouts(50, groups)
        run.finish()
    calls = [("list_alerts", {"run_id": run.id}), ("get_failure_clusters", {"run_id": run.id, "max_clusters": 4})]
    for _ in range(50):  # alerts are evaluated just after ingest answers
        tools, results = asyncio.run(session_calls(server.url, calls[:1]))
        if json.loads(results[0][1])["count"]:
            break
    tools, results = asyncio.run(session_calls(server.url, calls))
    assert {"list_alerts", "get_failure_clusters"} <= {t.name for t in tools}
    assert [err for err, _ in results] == [False, False], results
    alerts, clusters = (json.loads(text) for _, text in results)
    assert [(a["ruleId"], a["step"]) for a in alerts["alerts"]] == [("entropy-falling", 42)]
    assert clusters["trajectories"] == 8
    assert sorted(c["size"] for c in clusters["clusters"]) == [4, 4]
    assert any("look > look" in c["name"] for c in clusters["clusters"])


def _post(url, path, body):
    import urllib.request

    req = urllib.request.Request(
        url + path, json.dumps(body).encode(), {"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def test_labels_and_task_timelines_in_the_read_api_and_mcp(logged):
    """A trajectory and a turn labelled over HTTP are found by run.trajectories(label=...), run.labels()
    and the search; the timeline and diff tools read the task across steps."""
    url, rid = logged["url"], logged["id"]
    api = turnlens.Api(url)
    run = api.run(rid)
    trajs = run.trajectories(step=3, pandas=False)
    win = next(t for t in trajs if t["uid"] == "task-0" and t["success"])
    lose = next(t for t in trajs if t["uid"] == "task-0" and not t["success"])
    hack = _post(url, "/api/v1/labels", {"project": logged["project"], "name": "reward hacking"})
    loops = _post(url, "/api/v1/labels", {"project": logged["project"], "name": "loops"})
    _post(url, f"/api/v1/trajectories/{win['id']}/labels", {"labelId": hack["id"], "note": "pushes without a goal"})
    _post(url, f"/api/v1/trajectories/{lose['id']}/labels", {"labelId": loops["id"], "turn": 1})

    assert [t["id"] for t in run.trajectories(label="reward hacking", pandas=False)] == [win["id"]]
    assert [t["id"] for t in run.trajectories(label="loops", pandas=False)] == [lose["id"]]
    rows = run.labels(pandas=False)
    assert [(r["step"], r["task"], r["index"], r["turn"], r["label"]) for r in rows] == [
        (3, "task-0", win["index"], None, "reward hacking"),
        (3, "task-0", lose["index"], 1, "loops"),
    ]
    assert rows[0]["note"] == "pushes without a goal" and rows[0]["trajectoryId"] == win["id"]
    assert [r["label"] for r in run.labels(label="loops", pandas=False)] == ["loops"]
    assert [(x["name"], x["position"], x["uses"]) for x in api.labels(logged["project"], pandas=False)] == [
        ("reward hacking", 1, 1),
        ("loops", 2, 1),
    ]
    timeline = api.task_timeline([rid], task="task-0", pandas=False)
    assert sorted(t["id"] for t in timeline) == sorted(t["id"] for t in trajs if t["uid"] == "task-0")
    assert {t["meanAdvantage"] for t in timeline} == {0.5, -0.5}
    # by prompt: the trajectories whose first observation is the text (trimmed); "room 0-1-0" starts only the losing one
    assert [t["id"] for t in api.task_timeline([rid], prompt="  room 0-1-0\n", pandas=False)] == [lose["id"]]

    calls = [
        ("list_labels", {"run_id": rid}),
        ("list_labels", {"project": logged["project"]}),
        ("search_trajectories", {"run_id": rid, "label": "loops"}),
        ("get_task_timeline", {"run_ids": [rid], "task": "task-0"}),
        ("diff_trajectories", {"a": win["id"], "b": lose["id"]}),
        ("get_task_timeline", {"run_ids": [rid]}),
        ("get_task_timeline", {"run_ids": [rid], "prompt": "room 0-0-0"}),
    ]
    tools, results = asyncio.run(session_calls(url, calls))
    assert {"list_labels", "get_task_timeline", "diff_trajectories"} <= {t.name for t in tools}
    assert [err for err, _ in results] == [False] * 5 + [True, False], results
    by_run, label_set, found, tl, diff = (json.loads(t) for _, t in results[:5])
    assert [r["label"] for r in by_run["labels"]] == ["reward hacking", "loops"]
    assert [x["name"] for x in label_set["labels"]] == ["reward hacking", "loops"]
    assert [t["id"] for t in found["trajectories"]] == [lose["id"]]
    assert tl["count"] == 2 and {t["success"] for t in tl["trajectories"]} == {True, False}
    # "push the box left" against "wait" at both turns
    assert diff["differing"] == 2 and [t["differs"] for t in diff["turns"]] == [True, True]
    assert diff["turns"][0]["a"]["advantage"] == 0.5 and diff["turns"][0]["b"]["advantage"] == -0.5
    assert results[5][1] == "arguments: give exactly one of task (group uid), seed or prompt"
    by_prompt = json.loads(results[6][1])
    assert [t["id"] for t in by_prompt["trajectories"]] == [win["id"]]
