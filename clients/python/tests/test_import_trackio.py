"""Trackio projects written by the real trackio package in the test (its local SQLite database):
every run of the project becomes a run; scalars become curves (two values at one step: the later
kept, the earlier counted as replaced); histograms are reported as not scalars; a re-import stores
nothing twice."""

import json
import os
import subprocess
import sys

import pytest

from turnlens.importers import run_import

pytest.importorskip("trackio")

WRITE = r"""
import trackio
trackio.init(project="sokoban", name="run-a", config={"lr": 1e-6, "group_size": 8})
for s in range(10):
    trackio.log({"train/reward": s / 10, "loss": 1 / (s + 1)}, step=s)
trackio.log({"train/reward": 0.95}, step=9)
trackio.log({"weights": trackio.Histogram([1, 2, 3, 3])}, step=10)
trackio.log({"loss": float("nan")}, step=10)
trackio.finish()
trackio.init(project="sokoban", name="run-b", config={"lr": 2e-6})
trackio.log({"train/reward": 0.5}, step=0)
trackio.finish()
"""


def test_trackio_project(server, tmp_path):
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio")}
    out = subprocess.run([sys.executable, "-c", WRITE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    db = tmp_path / "trackio" / "sokoban.db"
    assert db.exists()

    reps = run_import("trackio", str(db), project="trackio-imports", url=server.url)
    runs = {server.get(f"/api/v1/runs/{r.run_id}")["name"]: r for r in reps}
    assert set(runs) == {"run-a", "run-b"}
    a = runs["run-a"]
    assert a.imported == 21 and len(a.replaced) == 1  # 10 steps x 2 + the NaN loss; 0.9 at step 9 replaced
    assert a.replaced[0][1] == "value 0.9 replaced by the later value 0.95 at the same step"
    hist = [w for w, r in a.rejected if r == "Trackio trackio.histogram is not a scalar (TurnLens imports scalar curves)"]
    assert len(hist) == 1 and hist[0].startswith("metrics row ") and hist[0].endswith(" weights")
    assert a.replaced[0][0].startswith("metrics row ") and a.replaced[0][0].endswith(": train/reward step 9")
    assert all(w in ("system_metrics",) or w == hist[0] for w, _ in a.rejected)  # psutil readings, if any, are reported
    run = server.get(f"/api/v1/runs/{a.run_id}")
    assert run["config"]["lr"] == 1e-6 and run["config"]["group_size"] == 8 and run["config"]["trackio"]["project"] == "sokoban"
    got = server.metrics(a.run_id)
    assert got["train/reward"][9] == 0.95 and len(got["train/reward"]) == 10 and got["loss"][0] == 1.0
    assert server.metrics(runs["run-b"].run_id) == {"train/reward": {0: 0.5}}

    # the whole TRACKIO_DIR folder: the same runs, nothing stored twice
    again = run_import("trackio", str(tmp_path / "trackio"), project="trackio-imports", url=server.url)
    assert sorted((r.run_id, r.imported, r.already, len(r.replaced)) for r in again) == \
        sorted((r.run_id, 0, r.imported, len(r.replaced)) for r in reps)


# TRL's completions table (GRPOTrainer.log with report_to="trackio": step, prompt, completion, a column per
# reward function, advantage; 2 prompts x 4 completions a step, advantages as TRL computes them with
# scale_rewards="group") and a trackio.Trace of a two-turn tool-calling episode.
TABLES = r"""
import json, statistics
import pandas as pd
import trackio

trackio.init(project="grpo", name="tables", config={"num_generations": 4, "reward_weights": [1.0, 0.5], "scale_rewards": "group"})
logged = {}
for step in (1, 2, 3):
    # step 3: both dataset rows carry one prompt; they are still two groups (TRL groups by position)
    prompts = [("count the apples" if step == 3 else f"prompt {step}-{p}") for p in range(2) for _ in range(4)]
    completions = [f"answer {step}.{i}" for i in range(8)]
    correct = [float((i + step) % 3 == 0) for i in range(8)]
    short = [-0.25 * ((i * step) % 4) for i in range(8)]
    rewards = [c + 0.5 * s for c, s in zip(correct, short)]
    adv = []
    for g in range(2):
        block = rewards[4 * g:4 * g + 4]
        m = sum(block) / 4
        adv += [(x - m) / (statistics.stdev(block) + 1e-4) for x in block]
    table = pd.DataFrame({"step": [step] * 8, "prompt": prompts, "completion": completions, "correct": correct,
                          "short": short, "advantage": adv})
    trackio.log({"completions": trackio.Table(dataframe=table)})
    trackio.log({"train/reward": sum(rewards) / 8, "train/global_step": step})
    logged[step] = {"completions": completions, "advantages": adv, "rewards": rewards}
call = {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
trackio.log({"episode": trackio.Trace(
    messages=[{"role": "system", "content": "You move in a maze."}, {"role": "user", "content": "Find the exit."},
              {"role": "assistant", "content": "", "tool_calls": [call]},
              {"role": "tool", "tool_call_id": "c1", "content": "a wall to the north"},
              {"role": "assistant", "content": "go south"}],
    metadata={"reward": 1.0, "advantage": 0.625, "step": 2, "episode": 7},
    spans=[{"id": "s1", "name": "policy", "kind": "generation", "duration_ms": 12.5},
           {"id": "s2", "name": "look", "kind": "tool", "parent_id": "s1", "duration_ms": 3.0}])})
trackio.log({"unscored": trackio.Trace(messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
                                        metadata={"step": 3})})
trackio.finish()
print(json.dumps(logged))
"""


def stored(server, run_id, step):
    """Every trajectory of a step with its turns, in generation-batch order (a TRL group's uid starts with its position)."""
    trs = sorted(server.trajectories(run_id, step), key=lambda t: (t["uid"], t["index"]))
    return [server.get(f"/api/v1/trajectories/{t['id']}") for t in trs]


def test_trl_completions_table_and_trace(server, tmp_path):
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio")}
    out = subprocess.run([sys.executable, "-c", TABLES], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    logged = {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}

    [rep] = run_import("trackio", str(tmp_path / "trackio"), project="trackio-imports", url=server.url)
    unscored = [(w, why) for w, why in rep.rejected if w != "system_metrics"]
    assert rep.imported == 2 * 3 + 3 * 8 + 1 and len(unscored) == 1, rep.as_dict()
    assert unscored[0][0].startswith("trace ") and unscored[0][0].endswith(":unscored")
    assert unscored[0][1] == "metadata.reward: required (a trajectory needs the episode's reward)"
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert sorted(steps) == [1, 2, 3]
    assert [(steps[s]["groups"], steps[s]["trajectories"], steps[s]["estimator"]) for s in (1, 2, 3)] == \
        [(2, 8, "grpo"), (3, 9, "grpo"), (2, 8, "grpo")]  # the trace is a group of its own at step 2
    for step in (1, 2, 3):
        trajs = stored(server, rep.run_id, step)
        table = trajs[:8]
        assert [t["turns"][0]["action"] for t in table] == logged[step]["completions"]
        assert [t["turns"][0]["advantage"] for t in table] == logged[step]["advantages"]  # exact: as TRL logged them
        assert [t["reward"] for t in table] == logged[step]["rewards"]
        assert [t["success"] for t in table] == [r > 0 for r in logged[step]["rewards"]]
        assert len({t["uid"] for t in table}) == 2 and all(t["uid"] == table[4 * (i // 4)]["uid"] for i, t in enumerate(table))
    [episode] = stored(server, rep.run_id, 2)[8:]
    turns = episode["turns"]
    assert [t["action"] for t in turns] == [json.dumps([{"function": {"arguments": "{}", "name": "look"}, "id": "c1", "type": "function"}],
                                                       sort_keys=True), "go south"]
    assert turns[0]["observation"] == "system: You move in a maze.\n\nuser: Find the exit."
    assert turns[1]["observation"] == "tool: a wall to the north"
    assert [t["reward"] for t in turns] == [0.0, 1.0] and [t["advantage"] for t in turns] == [0.625, 0.625]
    assert episode["reward"] == 1.0 and episode["success"] is True
    assert [s["name"] for s in turns[1]["info"]["spans"]] == ["policy", "look"]
    assert turns[1]["info"]["trackio"]["metadata"] == {"episode": 7}
    assert set(server.metrics(rep.run_id)["train/reward"]) == {1, 2, 3}  # at the trainer's global step

    again = run_import("trackio", str(tmp_path / "trackio"), project="trackio-imports", url=server.url)
    assert [(r.run_id, r.imported, r.already) for r in again] == [(rep.run_id, 0, rep.imported)]
