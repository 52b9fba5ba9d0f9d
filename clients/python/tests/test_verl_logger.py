"""verl's own Tracking: TurnLens as a `trainer.logger` backend, and the JSONL its `file` backend
writes imported with every value (and nothing twice on a re-import)."""

import json

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("verl")
from verl.utils.tracking import Tracking  # noqa: E402

from turnlens.importers import run_import  # noqa: E402

STEPS = {
    1: {"actor/pg_loss": 0.25, "critic/score/mean": np.float32(0.5), "response_length/mean": 12, "timing_s/gen": np.float64(1.5)},
    2: {"actor/pg_loss": -0.125, "critic/score/mean": np.float32(0.75), "response_length/mean": 14, "val-core/gsm8k/reward/mean@1": 0.3},
    3: {"actor/pg_loss": 0.0, "critic/score/mean": np.float32(1.0), "note": "not a number"},
}


def test_tracking_with_the_turnlens_backend_logs_what_reaches_the_server(server, monkeypatch):
    from turnlens.integrations import verl_logger

    monkeypatch.setenv("TURNLENS_URL", server.url)
    verl_logger.register()
    verl_logger.register()  # twice is harmless
    assert Tracking.supported_backend.count("turnlens") == 1
    tr = Tracking(project_name="verl-logger", experiment_name="gsm8k-grpo", default_backend=["console", "turnlens"],
                  config={"trainer": {"project_name": "verl-logger"}, "algorithm": {"adv_estimator": "grpo"}})
    for step, data in STEPS.items():
        tr.log(data=data, step=step)
    run_id = tr.logger["turnlens"].run.id
    tr.finish()
    got = server.metrics(run_id)
    for step, data in STEPS.items():
        for k, v in data.items():
            if k == "note":
                continue
            key = k.replace("@", "_")
            assert got[key][step] == pytest.approx(float(v))
    assert got["verl/skipped_values"][3] == 1.0
    run = server.get(f"/api/v1/runs/{run_id}")
    run = run.get("run", run)
    assert run["status"] == "succeeded" and run["config"]["algorithm"]["adv_estimator"] == "grpo"


def test_file_logger_jsonl_imports_every_value_once(server, tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path / "logs"))
    tr = Tracking(project_name="proj", experiment_name="exp1", default_backend=["file"])
    for step, data in STEPS.items():
        tr.log(data=data, step=step)
    tr.finish()
    path = tmp_path / "logs" / "proj" / "exp1.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2, 3]  # what verl wrote: {"step", "data"}
    numeric = sum(1 for d in STEPS.values() for k in d if k != "note")
    [rep] = run_import("verl-file", str(tmp_path / "logs"), project="imports", url=server.url)
    assert rep.imported == numeric and rep.already == 0
    assert [(w, r) for w, r in rep.rejected] == [("exp1.jsonl:3", "data['note']: expected a number, got str 'not a number'")]
    got = server.metrics(rep.run_id)
    for step, data in STEPS.items():
        for k, v in data.items():
            if k != "note":
                assert got[k.replace("@", "_")][step] == pytest.approx(float(v))
    [again] = run_import("verl-file", str(tmp_path / "logs"), project="imports", url=server.url)
    assert again.run_id == rep.run_id and again.imported == 0 and again.already == numeric
    assert server.metrics(rep.run_id) == got


def test_multi_turn_rollout_dump_written_by_verl_imports_every_sample(server, tmp_path):
    """trainer.rollout_data_dir as verl's own writer leaves it (RayPPOTrainer._write_generations; needs
    the trainer module's imports, skipped where they are not installed). A multi-turn sample's output
    is the decoded response with the tool text inside and no response_mask, so it imports as one turn
    whose info keeps num_turns and the other reward fields."""
    ray_trainer = pytest.importorskip("verl.trainer.ppo.ray_trainer")
    write = ray_trainer.RayPPOTrainer._write_generations
    for step in (1, 2):
        inputs = ["solve 2+2", "solve 2+2", "solve 3+3", "solve 3+3"]
        outputs = [f"call calc -> 4 ... answer {step}", "answer 5", "call calc -> 6 ... 6", "answer 6"]
        write(inputs, outputs, ["4", "4", "6", "6"], [1.0, 0.0, 1.0, 1.0],
              {"num_turns": [4, 2, 4, 2], "acc": [1.0, 0.0, 1.0, 1.0], "request_id": ["a", "b", "c", "d"]},
              str(tmp_path / "rollouts"), step)
    [rep] = run_import("verl", str(tmp_path / "rollouts"), project="imports", url=server.url)
    assert rep.imported == 8 and not rep.rejected
    for step in (1, 2):
        trs = server.trajectories(rep.run_id, step)
        assert len(trs) == 4
        turns = [server.get(f"/api/v1/trajectories/{t['id']}")["turns"] for t in trs]
        assert sorted(t[0]["info"]["num_turns"] for t in turns) == [2, 2, 4, 4]
        assert sorted(t[0]["info"]["request_id"] for t in turns) == ["a", "b", "c", "d"]
        assert any(t[0]["action"] == f"call calc -> 4 ... answer {step}" for t in turns)
    [again] = run_import("verl", str(tmp_path / "rollouts"), project="imports", url=server.url)
    assert again.imported == 0 and again.already == 8


def test_v1_trainer_dump_stores_each_sessions_outputs_as_one_trajectory(server, tmp_path):
    """verl's v1 trainer (trainer.use_v1) dumps one line per agent-loop output, uid "{prompt}_{session}_{index}",
    with the final output's score copied onto the earlier ones (agent_loop_tq.py). The file is written
    by the v1 trainer's own _write_generations, run from the installed verl source (its module needs
    transfer_queue to import)."""
    import ast
    import importlib.util
    import os
    import textwrap
    from pathlib import Path

    v1 = Path(importlib.util.find_spec("verl").origin).parent / "trainer" / "ppo" / "v1" / "trainer_base.py"
    text = v1.read_text()
    fn = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == "_write_generations")
    ns = {"os": os, "json": json, "np": np}
    exec(textwrap.dedent(ast.get_source_segment(text, fn)), ns)
    write = ns["_write_generations"]
    # two prompts x two sessions; session p0_1 has three outputs (e.g. context compaction), the rest one
    keys = ["p0_0_0", "p0_1_0", "p0_1_1", "p0_1_2", "p1_0_0", "p1_1_0"]
    outs = ["a", "b0", "b1", "b2", "c", "d"]
    scores = [1.0, 0.5, 0.5, 0.5, 0.0, 1.0]
    order = [3, 0, 5, 1, 4, 2]  # any line order: the importer orders by the key
    write(["q0", "q0", "q0", "q0", "q1", "q1"], [outs[i] for i in order], [None] * 6, [scores[i] for i in order],
          {"uid": [keys[i] for i in order]}, str(tmp_path / "v1"), 5)
    [rep] = run_import("verl", str(tmp_path / "v1"), project="imports", url=server.url)
    assert rep.imported == 6 and not rep.rejected
    trs = server.trajectories(rep.run_id, 5)
    assert sorted(t["length"] for t in trs) == [1, 1, 1, 3]
    long = next(t for t in trs if t["length"] == 3)
    turns = server.get(f"/api/v1/trajectories/{long['id']}")["turns"]
    assert [t["action"] for t in turns] == ["b0", "b1", "b2"]
    assert [t["reward"] for t in turns] == [0.0, 0.0, 0.5] and [t["info"]["score"] for t in turns] == [0.5] * 3
    assert long["reward"] == 0.5
    groups = server.get(f"/api/v1/runs/{rep.run_id}/steps/5/groups")["groups"]
    assert sorted(g["uid"] for g in groups) == ["p0", "p1"]


def test_started_by_a_turnlens_worker_the_logger_writes_into_that_run(server, monkeypatch):
    """A trainer template's process (docs/trainers.md): TURNLENS_RUN_ID and TURNLENS_WRITE_KEY name
    the launched run, and verl's logger, whatever project and experiment it is given, writes there."""
    import urllib.request

    from turnlens.integrations import verl_logger

    # a run and its write key, standing in for the ones a launch creates
    req = urllib.request.Request(f"{server.url}/api/v1/runs/import", method="POST", headers={"content-type": "application/json"},
                                 data=json.dumps({"project": "launched", "name": "the-launched-run"}).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        owner = json.loads(r.read())
    monkeypatch.setenv("TURNLENS_URL", server.url)
    monkeypatch.setenv("TURNLENS_RUN_ID", owner["id"])
    monkeypatch.setenv("TURNLENS_WRITE_KEY", owner["writeKey"])
    verl_logger.register()
    # a project no other test logs to, so its absence below says this logger made no run of its own
    tr = Tracking(project_name="verl-logger-in-a-launched-run", experiment_name="other-name", default_backend=["turnlens"])
    tr.log(data={"actor/pg_loss": 0.5}, step=1)
    assert tr.logger["turnlens"].run.id == owner["id"]
    tr.finish()
    assert server.metrics(owner["id"])["actor/pg_loss"][1] == pytest.approx(0.5)
    projects = {p["name"] for p in server.get("/api/v1/projects")["projects"]}
    assert "verl-logger-in-a-launched-run" not in projects  # no run of its own
