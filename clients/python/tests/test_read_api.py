"""turnlens.Api against a real server: the read API returns what the HTTP API holds (metrics as the
full-resolution export has them, NaN and ±Inf included; every turn of a multi-step run; a group's
credit as stored and recomputed), with pandas and without, and runs() filters and orders."""

import json
import math
import secrets
import sys
import urllib.parse

import pytest

import turnlens
from turnlens import api as api_module
from turnlens.api import NotFound

STEPS, GROUPS, TRAJS = 4, 3, 4
METRIC_STEPS = 1200


def turn_count(step, g, t):
    return 1 + (step + g + t) % 4  # 1 to 4 turns: trajectories of different lengths


def logged_groups(step):
    """Distinct content per (step, group, trajectory, turn); rewards differ within a group so a recomputed
    estimator gives advantages other than the stored ones."""
    out = {}
    for g in range(GROUPS):
        trajs = []
        for t in range(TRAJS):
            n = turn_count(step, g, t)
            turns = [{"observation": f"s{step}-g{g}-t{t}-k{k}", "action": ["left", "right", "up"][k % 3],
                      "reward": round(0.25 * ((t + k + g) % 3), 4), "anchor": f"a{k % 2}",
                      "advantage": round(0.1 * (g - t + k) + 0.01 * step, 6), "logprob": -0.5 - 0.1 * k, "my_field": k}
                     for k in range(n)]
            trajs.append({"turns": turns, "success": (t + step) % 2 == 0})
        out[f"task-{g}"] = trajs
    return out


@pytest.fixture(scope="module")
def runs(server, tmp_path_factory):
    """Three runs in a project of their own: `main` with metrics (a NaN and an Infinity among them) and
    STEPS rollout steps; `small` and `failed` with other configs, statuses and summaries."""
    project = f"read-api-{secrets.token_hex(4)}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TURNLENS_DIR", str(tmp_path_factory.mktemp("home")))
        main = turnlens.init(project=project, name="b-main", config={"lr": 1e-4, "env": {"size": 6}}, url=server.url,
                             env_id="sokoban", estimator="gigpo", tags=["big"])
        for step in range(METRIC_STEPS):
            values = {"train/loss": 1.0 / (step + 1), "train/reward": math.sin(step / 10)}
            if step % 7 == 0:
                values["eval/success"] = step / METRIC_STEPS
            if step == 100:
                values["train/loss"] = float("nan")
            if step == 200:
                values["train/reward"] = float("inf")
            main.log(values, step=step)
        main.log({"final/score": 0.9}, step=METRIC_STEPS)
        for step in range(STEPS):
            main.log_rollouts(step, logged_groups(step), params={"gamma": 0.95})
        main.finish()
        small = turnlens.init(project=project, name="a-small", config={"lr": 3e-4, "env": {"size": 4}}, url=server.url)
        small.log({"final/score": 0.5}, step=0)
        small.finish()
        failed = turnlens.init(project=project, name="c-failed", config={"lr": 1e-5, "env": {"size": 6}}, url=server.url)
        failed.log({"final/score": 0.7}, step=0)
        failed.finish("failed", error="diverged")
    assert main.rejected == [] and small.rejected == [] and failed.rejected == []
    return {"project": project, "main": main.id, "small": small.id, "failed": failed.id, "url": server.url}


@pytest.fixture(params=["pandas", "plain"])
def tables(request, monkeypatch):
    """Runs a test once with pandas (skipped when it is not installed) and once with its import made to fail."""
    if request.param == "pandas":
        return pytest.importorskip("pandas")
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    return None


def records(table, pd):
    """A table as a list of dicts, whichever form it came in."""
    if pd is None:
        assert isinstance(table, list)
        return table
    assert isinstance(table, pd.DataFrame)
    return table.to_dict("records")


def same(a, b):
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


def raw_turns(server, run_id, limit=7):
    """Every turn of a run straight from the cursor endpoint, in small pages."""
    out, after = [], -1
    while True:
        r = server.get(f"/api/v1/runs/{run_id}/turns?after={after}&limit={limit}")
        out += r["turns"]
        if r["next"] is None:
            return out
        after = r["next"]


def raw_credit(server, run_id, step, group_id, estimator=None, params=None):
    q = {k: v for k, v in {"estimator": estimator, "params": json.dumps(params) if params else None}.items() if v}
    return server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{group_id}/credit"
                      + ("?" + urllib.parse.urlencode(q) if q else ""))


# ---------------------------------------------------------------- runs


def test_run_by_id_has_config_summary_and_name(runs):
    api = turnlens.Api(url=runs["url"])
    run = api.run(runs["main"])
    assert (run.id, run.name, run.project, run.status) == (runs["main"], "b-main", runs["project"], "succeeded")
    assert run.config == {"lr": 1e-4, "env": {"size": 6}}
    assert run.summary["final/score"] == pytest.approx(0.9)
    assert run.summary["train/loss"] == pytest.approx(1.0 / METRIC_STEPS)
    assert run.tags == ["big"] and run.env_id == "sokoban" and run.estimator == "gigpo"
    assert "train/loss" in run.keys() and "eval/success" in run.keys()


def test_unknown_run_id_names_the_id(runs):
    api = turnlens.Api(url=runs["url"])
    with pytest.raises(NotFound) as e:
        api.run("no-such-run-42")
    assert "no-such-run-42" in str(e.value) and e.value.status == 404
    assert isinstance(e.value, turnlens.ApiError)


def test_runs_filter_and_order(runs):
    api = turnlens.Api(url=runs["url"])
    p = runs["project"]
    assert [r.name for r in api.runs(project=p, order="name")] == ["a-small", "b-main", "c-failed"]
    assert [r.name for r in api.runs(project=p, order="-name")] == ["c-failed", "b-main", "a-small"]
    assert [r.name for r in api.runs(project=p, order="+created_at")] == ["b-main", "a-small", "c-failed"]
    assert [r.name for r in api.runs(project=p)] == ["c-failed", "a-small", "b-main"]  # newest first
    assert [r.name for r in api.runs(project=p, order="-metric:final/score")] == ["b-main", "c-failed", "a-small"]
    assert [r.name for r in api.runs(project=p, order="summary.final/score")] == ["a-small", "c-failed", "b-main"]
    assert [r.id for r in api.runs(project=p, filters={"status": "failed"})] == [runs["failed"]]
    assert {r.name for r in api.runs(project=p, filters={"config.lr": ("<=", 1e-4)})} == {"b-main", "c-failed"}
    assert {r.name for r in api.runs(project=p, filters={"config": {"env.size": 6, "lr": (">", 5e-5)}})} == {"b-main"}
    assert {r.name for r in api.runs(project=p, filters={"config": "env.size=4"})} == {"a-small"}
    assert [r.name for r in api.runs(project=p, filters={"tag": "big", "q": "main"})] == ["b-main"]
    assert api.runs(project=p, filters={"status": "running"}) == []
    got = api.runs(project=p, order="name")[1]
    assert got.config == {"lr": 1e-4, "env": {"size": 6}} and got.summary["final/score"] == pytest.approx(0.9)


def test_runs_are_paged_for_the_caller(runs, monkeypatch):
    monkeypatch.setattr(api_module, "RUNS_PAGE", 2)
    api = turnlens.Api(url=runs["url"])
    assert [r.name for r in api.runs(project=runs["project"], order="name")] == ["a-small", "b-main", "c-failed"]


def test_http_errors_carry_the_servers_message(runs):
    api = turnlens.Api(url=runs["url"])
    with pytest.raises(turnlens.ApiError) as e:
        api.runs(project=runs["project"], filters={"status": "exploded"})
    assert e.value.status == 400 and "status" in str(e.value) and "runs(" in str(e.value)
    assert any(i["path"].endswith("status") for i in e.value.issues)
    with pytest.raises(turnlens.ApiError) as e:
        api.runs(filters={"config": "lr>>1"})
    assert e.value.status == 400 and "config" in str(e.value)


# ---------------------------------------------------------------- metrics


def test_history_is_every_exported_point(runs, server, tables):
    export = server.metrics(runs["main"])  # the full-resolution CSV export
    assert math.isnan(export["train/loss"][100]) and export["train/reward"][200] == math.inf
    assert len(export["train/loss"]) == METRIC_STEPS and len(export["eval/success"]) == math.ceil(METRIC_STEPS / 7)
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    rows = records(run.history(), tables)
    assert len(rows) == METRIC_STEPS + 1 and [r["_step"] for r in rows] == list(range(METRIC_STEPS + 1))
    got = {}
    for r in rows:
        for k, v in r.items():
            # a DataFrame has NaN where a key was not logged; the export has no row there
            if k != "_step" and not (tables is not None and math.isnan(v) and r["_step"] not in export.get(k, {})):
                got.setdefault(k, {})[r["_step"]] = v
    assert set(got) == set(export)
    for k in export:
        assert sorted(got[k]) == sorted(export[k]), k
        assert all(same(got[k][s], export[k][s]) for s in export[k]), k


def test_history_keys_select_columns(runs, server, tables):
    export = server.metrics(runs["main"])
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    rows = records(run.history(keys="eval/success"), tables)
    assert [r["_step"] for r in rows] == sorted(export["eval/success"])
    assert all(set(r) == {"_step", "eval/success"} and r["eval/success"] == export["eval/success"][r["_step"]] for r in rows)


def test_history_with_more_keys_than_one_export_request(runs, server, monkeypatch):
    monkeypatch.setattr(api_module, "EXPORT_KEYS", 1)
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    rows = run.history(keys=["train/loss", "train/reward"], pandas=False)
    export = server.metrics(runs["main"])
    assert len(rows) == METRIC_STEPS
    assert all(same(r["train/loss"], export["train/loss"][r["_step"]]) and same(r["train/reward"], export["train/reward"][r["_step"]])
               for r in rows)


def test_history_reads_the_packed_export(runs, server, tables, monkeypatch):
    """Every point comes as packed arrays (base64 of little-endian int64 steps and float64 values,
    decoded in one call each), not as JSON numbers parsed one at a time; NaN and ±Inf as doubles."""
    asked = []
    real_get = turnlens.Api._get

    def spy(self, path, query=None, what=""):
        asked.extend(v for k, v in query or [] if k == "format")
        return real_get(self, path, query, what)

    monkeypatch.setattr(turnlens.Api, "_get", spy)
    rows = records(turnlens.Api(url=runs["url"]).run(runs["main"]).history(keys=["train/loss", "train/reward"]), tables)
    assert asked == ["packed"]
    export = server.metrics(runs["main"])
    assert [r["_step"] for r in rows] == list(range(METRIC_STEPS))
    assert all(same(r[k], export[k][r["_step"]]) for r in rows for k in ("train/loss", "train/reward"))
    assert math.isnan(rows[100]["train/loss"]) and rows[200]["train/reward"] == math.inf


def test_sampled_history_is_downsampled_from_the_stored_points(runs, server, tables):
    export = server.metrics(runs["main"])
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    rows = records(run.history(keys=["train/loss", "train/reward"], samples=50), tables)
    for k in ("train/loss", "train/reward"):
        # in a DataFrame a key not sampled at a row's step is NaN; only the NaN logged counts
        points = {r["_step"]: r[k] for r in rows
                  if k in r and not (tables is not None and math.isnan(r[k]) and not math.isnan(export[k][r["_step"]]))}
        assert 10 <= len(points) <= 120, f"{k}: {len(points)} points for samples=50"
        assert 0 in points and METRIC_STEPS - 1 in points  # first and last kept
        assert all(same(v, export[k][s]) for s, v in points.items()), k
    # the non-finite points come along (a downsampled chart leaves a gap there)
    assert any(r["_step"] == 100 and math.isnan(r["train/loss"]) for r in rows)
    assert any(r["_step"] == 200 and r["train/reward"] == math.inf for r in rows)
    with pytest.raises(ValueError):
        run.history(samples=5)


def test_history_pandas_frame_shape(runs):
    pd = pytest.importorskip("pandas")
    df = turnlens.Api(url=runs["url"]).run(runs["main"]).history(keys=["train/loss", "eval/success"])
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["_step", "train/loss", "eval/success"]
    assert df["_step"].is_monotonic_increasing and df["_step"].dtype == "int64" and len(df) == METRIC_STEPS
    assert df["eval/success"].notna().sum() == math.ceil(METRIC_STEPS / 7)


def test_a_run_without_such_data_gives_empty_tables(runs, tables):
    run = turnlens.Api(url=runs["url"]).run(runs["small"])
    assert records(run.history(keys="no/such-key"), tables) == []
    assert [r["final/score"] for r in records(run.history(), tables)] == [0.5]
    assert records(run.steps(), tables) == [] and records(run.turns(), tables) == []
    if tables is not None:
        assert list(run.turns().columns[:4]) == ["step", "uid", "groupId", "trajectoryIndex"]


# ---------------------------------------------------------------- rollouts


def test_steps_and_trajectories(runs, server, tables):
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    steps = records(run.steps(), tables)
    assert [s["step"] for s in steps] == list(range(STEPS))
    assert all(s["groups"] == GROUPS and s["trajectories"] == GROUPS * TRAJS and s["estimator"] == "gigpo" for s in steps)
    trajs = records(run.trajectories(step=2), tables)
    assert [(t["uid"], t["index"]) for t in trajs] == [(f"task-{g}", t) for g in range(GROUPS) for t in range(TRAJS)]
    assert [t["length"] for t in trajs] == [turn_count(2, g, t) for g in range(GROUPS) for t in range(TRAJS)]
    assert {t["id"] for t in trajs} == {t["id"] for t in server.trajectories(runs["main"], 2)}
    ok = records(run.trajectories(success=True), tables)
    assert len(ok) == STEPS * GROUPS * TRAJS // 2 and all(t["success"] for t in ok)
    assert [t["index"] for t in records(run.trajectories(step=1, group="task-2"), tables)] == list(range(TRAJS))
    with pytest.raises(NotFound) as e:
        run.trajectories(step=1, group="task-9")
    assert "task-9" in str(e.value) and "task-0" in str(e.value)


def test_search_is_the_search_endpoints_pages_and_the_logged_turns(runs, server, tables):
    """api.search / run.search give every trajectory the endpoint pages through, each once, and those
    are exactly the logged trajectories that match (text in an action, a later turn's advantage < 0)."""
    api = turnlens.Api(url=runs["url"])
    query = {"runs": runs["main"], "text": "right", "in": "action", "minTurn": 1, "advantage": "negative", "sort": "return"}
    raw, cursor = [], None
    while True:
        page = server.get("/api/v1/search/trajectories?" + urllib.parse.urlencode({**query, "pageSize": 3, **({"cursor": cursor} if cursor else {})}))
        raw += page["trajectories"]
        cursor = page["next"]
        if not cursor:
            break
    want = set()
    for step in range(STEPS):
        for g, (uid, trajs) in enumerate(logged_groups(step).items()):
            for t, traj in enumerate(trajs):
                turns = traj["turns"]
                if any(u["action"] == "right" for u in turns) and any(k >= 1 and u["advantage"] < 0 for k, u in enumerate(turns)):
                    want.add((step, uid, t))
    assert want and {(h["step"], h["task"], h["index"]) for h in raw} == want
    got = records(api.search(runs=[runs["main"]], text="right", in_="action", min_turn=1, advantage="negative", sort="return"), tables)
    assert [h["id"] for h in got] == [h["id"] for h in raw]
    assert [h["reward"] for h in got] == sorted((h["reward"] for h in got), reverse=True)
    run = api.run(runs["main"])
    assert [h["id"] for h in records(run.search(text="right", in_="action", min_turn=1, advantage="negative", sort="return", limit=2), tables)] == [h["id"] for h in raw[:2]]
    assert records(api.search(project=runs["project"], text="nosuchword"), tables) == []


def test_turns_of_the_whole_run_are_the_cursor_endpoints(runs, server, tables, monkeypatch):
    monkeypatch.setattr(api_module, "TURNS_PAGE", 7)  # many pages
    monkeypatch.setattr(api_module, "TRAJECTORIES_PAGE", 5)
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    want = raw_turns(server, runs["main"])
    assert len(want) == sum(turn_count(s, g, t) for s in range(STEPS) for g in range(GROUPS) for t in range(TRAJS))
    got = records(run.turns(), tables)
    assert [u["seq"] for u in got] == [u["seq"] for u in want]
    fields = ["trajectoryId", "index", "observation", "action", "reward", "valid", "done", "anchor", "advantage", "logprob"]
    for g, w in zip(got, want):
        assert all(same(g[f], w[f]) for f in fields), (g, w)
        assert g["info"] == w["info"]
        # the trajectory's place, as logged
        assert w["observation"] == f"s{g['step']}-g{g['uid'].split('-')[1]}-t{g['trajectoryIndex']}-k{w['index']}"


def test_turns_of_a_step_are_every_logged_turn(runs, server, tables, monkeypatch):
    monkeypatch.setattr(api_module, "TURNS_PAGE", 5)
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    for step in range(STEPS):
        got = records(run.turns(step=step), tables)
        logged = logged_groups(step)
        expect = [(uid, t, k, turn) for uid, trajs in logged.items() for t, traj in enumerate(trajs)
                  for k, turn in enumerate(traj["turns"])]
        assert sorted((u["uid"], u["trajectoryIndex"], u["index"]) for u in got) == [(uid, t, k) for uid, t, k, _ in expect]
        by_place = {(u["uid"], u["trajectoryIndex"], u["index"]): u for u in got}
        for uid, t, k, turn in expect:
            u = by_place[(uid, t, k)]
            assert u["step"] == step
            assert (u["observation"], u["action"], u["anchor"]) == (turn["observation"], turn["action"], turn["anchor"])
            assert u["reward"] == pytest.approx(turn["reward"]) and u["advantage"] == pytest.approx(turn["advantage"])
            assert u["info"] == {"my_field": k}
        # the same turns as each trajectory's own endpoint
        for tr in server.trajectories(runs["main"], step):
            full = server.get(f"/api/v1/trajectories/{tr['id']}")["turns"]
            mine = sorted((u for u in got if u["trajectoryId"] == tr["id"]), key=lambda u: u["index"])
            assert [u["seq"] for u in mine] == [u["seq"] for u in full]
            assert [u["advantage"] for u in mine] == [u["advantage"] for u in full]


def test_turns_filters_and_a_wrong_start_hint(runs, server, monkeypatch):
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    ok = run.turns(step=3, success=True, pandas=False)
    assert ok and all(u["step"] == 3 for u in ok)
    success = {t["id"]: t["success"] for t in server.trajectories(runs["main"], 3)}
    assert {u["trajectoryId"] for u in ok} == {i for i, s in success.items() if s}
    group = run.turns(step=1, group="task-1", pandas=False)
    assert {u["uid"] for u in group} == {"task-1"} and len(group) == sum(turn_count(1, 1, t) for t in range(TRAJS))
    assert run.turns(step=99, pandas=False) == []
    # were a step's turns ever not stored together, the cursor is read again from the start
    whole = run.turns(step=2, pandas=False)
    monkeypatch.setattr(api_module.ApiRun, "_turns_start", lambda self, trajs, whole_step: 10**6)
    assert run.turns(step=2, pandas=False) == whole


# ---------------------------------------------------------------- credit


def test_credit_stored_and_recomputed_match_the_endpoint(runs, server, tables):
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    step = 2
    group_id = next(g["id"] for g in run.groups(step, pandas=False) if g["uid"] == "task-1")
    stored = run.credit(step, "task-1")
    http = raw_credit(server, runs["main"], step, group_id)
    assert stored.source == "stored" and stored.estimator == "gigpo" and stored.trained["estimator"] == "gigpo"
    assert stored.advantages == http["advantages"] and stored.rewards == http["rewards"]
    logged = logged_groups(step)["task-1"]
    assert stored.advantages == [pytest.approx([u["advantage"] for u in t["turns"]]) for t in logged]
    assert run.credit(step, group_id).advantages == stored.advantages  # by id as by uid

    grpo = run.credit(step, "task-1", estimator="grpo")
    http = raw_credit(server, runs["main"], step, group_id, "grpo")
    assert grpo.source == "recomputed" and grpo.estimator == "grpo"
    assert grpo.advantages == http["advantages"] and grpo.advantages != stored.advantages
    eps = run.credit(step, "task-1", estimator="grpo", params={"epsilon": 0.5})
    assert eps.advantages == raw_credit(server, runs["main"], step, group_id, "grpo", {"epsilon": 0.5})["advantages"]
    assert eps.params["epsilon"] == 0.5 and eps.advantages != grpo.advantages

    # Dr.GRPO by hand: each turn gets its trajectory's reward minus the group's mean
    dr = run.credit(step, "task-1", estimator="drgrpo")
    totals = [sum(u["reward"] for u in t["turns"]) for t in logged]
    mean = sum(totals) / len(totals)
    assert dr.advantages == [pytest.approx([r - mean] * len(t["turns"])) for r, t in zip(totals, logged)]

    rows = records(grpo.table(), tables)
    assert len(rows) == sum(len(t["turns"]) for t in logged)
    assert [r["advantage"] for r in rows] == [a for t in grpo.advantages for a in t]
    assert [(r["trajectoryIndex"], r["turn"]) for r in rows] == [(i, k) for i, t in enumerate(logged) for k in range(len(t["turns"]))]


def test_credit_errors_name_what_was_asked(runs):
    run = turnlens.Api(url=runs["url"]).run(runs["main"])
    with pytest.raises(NotFound) as e:
        run.credit(2, "task-7")
    assert "task-7" in str(e.value) and "step 2" in str(e.value)
    with pytest.raises(turnlens.ApiError) as e:
        run.credit(2, "task-1", estimator="nonsense")
    assert e.value.status == 400 and "estimator" in str(e.value) and "credit(" in str(e.value)
    with pytest.raises(NotFound):
        run.credit(99, "task-1")


def test_token_defaults_and_unreachable_server(monkeypatch):
    monkeypatch.delenv("TURNLENS_API_TOKEN", raising=False)
    monkeypatch.setenv("TURNLENS_READ_TOKEN", "r" * 32)
    monkeypatch.setenv("TURNLENS_URL", "http://127.0.0.1:9")
    api = turnlens.Api(timeout=0.5)
    assert api.url == "http://127.0.0.1:9" and api._transport.token == "r" * 32
    monkeypatch.setenv("TURNLENS_API_TOKEN", "a" * 32)
    assert turnlens.Api()._transport.token == "a" * 32 and turnlens.Api(token="t")._transport.token == "t"
    with pytest.raises(turnlens.Unavailable) as e:
        api.run("abc")
    assert "run 'abc'" in str(e.value)
