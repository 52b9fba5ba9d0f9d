"""rLLM's episode logs, written by rLLM's own EpisodeLogger: rLLM is not on PyPI, so its writer
(rllm/utils/episode_logger.py) and the types it logs (rllm/types.py) are copied unchanged into
tests/vendor/rllm from rllm-org/rllm at 9beb6e0. Each episode's trajectories land in rLLM's own
groups (task_id:trajectory name) at their training step; val episodes make a run of their own."""

import enum
import json
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("pydantic")
sys.path.insert(0, str(Path(__file__).parent / "vendor"))

from rllm.types import Episode, Step, Trajectory  # noqa: E402
from rllm.utils.episode_logger import EpisodeLogger  # noqa: E402

from turnlens.importers import KINDS, run_import  # noqa: E402


class TerminationReason(enum.Enum):  # rllm.workflows.workflow's values (the logger writes .value)
    ENV_DONE = "env_done"
    MAX_TURNS_EXCEEDED = "max_turns_exceeded"


def solver(task_id, k, correct):
    """A two-step math-tool trajectory: the first step's observation and action as rLLM agents set them, the
    second's only in the chat (observation and action left empty, as a chat-completions workflow logs them)."""
    chat = [{"role": "user", "content": f"solve {task_id}"}, {"role": "assistant", "content": "call calc(2+2)"},
            {"role": "tool", "content": "4"}, {"role": "assistant", "content": "4" if correct else "5"}]
    return Trajectory(name="solver", steps=[
        Step(observation=f"solve {task_id}", action={"tool": "calc", "args": "2+2"}, thought="use the tool",
             model_response="call calc(2+2)", chat_completions=chat[:2], reward=0.0, metadata={"timing": {"llm": 0.5}}),
        Step(chat_completions=chat, reward=1.0 if correct else 0.0, done=True, model_response=chat[-1]["content"]),
    ], reward=1.0 if correct else 0.0)


def test_rllm_episode_logger(server, tmp_path):
    logger = EpisodeLogger(str(tmp_path / "logs" / "math" / "exp-1"))
    train = [
        Episode(id="t7:0", task={"q": "2+2"}, is_correct=True, termination_reason=TerminationReason.ENV_DONE,
                trajectories=[solver("t7", 0, True), Trajectory(name="judge", steps=[Step(observation="judge it", action="ok", reward=0.5, done=True)])],
                metrics={"solver_acc": 1.0}),
        Episode(id="t7:1", task={"q": "2+2"}, is_correct=False, termination_reason=TerminationReason.MAX_TURNS_EXCEEDED,
                trajectories=[solver("t7", 1, False), Trajectory(name="judge", steps=[Step(observation="judge it", action="no", reward=0.25, done=True)])]),
        Episode(id="t9:0", task={"q": "3+3"}, is_correct=True, trajectories=[solver("t9", 0, True), Trajectory(name="empty")]),
    ]
    logger.log_episodes_batch(train, step=3, mode="train", epoch=0)
    logger.log_episodes_batch(train[:1], step=4, mode="train", epoch=0)
    logger.log_episodes_batch(train[2:], step=3, mode="val", epoch=0)
    step3 = tmp_path / "logs" / "math" / "exp-1" / "episodes" / "train_step_3_epoch_0"
    assert len(list(step3.glob("episode_hash*_id*.json"))) == 3

    reps = run_import("rllm", str(tmp_path / "logs" / "math" / "exp-1"), project="rllm-imports", url=server.url)
    train_rep, val_rep = sorted(reps, key=lambda r: r.source)
    assert train_rep.source.endswith("exp-1/train") and val_rep.source.endswith("exp-1/val")
    empty = "no steps (rLLM leaves such a trajectory out of training too)"
    assert [r for _, r in train_rep.rejected] == [empty] and train_rep.rejected[0][0].endswith("_idt9_0.json: trajectories[1]")
    assert train_rep.imported == 5 + 2

    steps = sorted(server.steps(train_rep.run_id)["steps"], key=lambda s: s["step"])
    assert [(s["step"], s["groups"], s["trajectories"], s["estimator"]) for s in steps] == [(3, 3, 5, None), (4, 2, 2, None)]
    trs = [server.get(f"/api/v1/trajectories/{t['id']}") for t in server.trajectories(train_rep.run_id, 3)]
    by_group = {}
    for t in trs:
        by_group.setdefault(t["uid"], []).append(t)
    assert {k: len(v) for k, v in by_group.items()} == {"t7:solver": 2, "t7:judge": 2, "t9:solver": 1}

    logged = json.loads(next(step3.glob("*_idt7_1.json")).read_text())  # what EpisodeLogger wrote for t7:1
    wrong = next(t for t in by_group["t7:solver"] if t["turns"][-1]["info"]["rllm"]["episode_id"] == "t7:1")
    assert (wrong["reward"], wrong["success"], wrong["truncated"]) == (0.0, False, True)
    first, second = wrong["turns"]
    assert first["observation"] == logged["trajectories"][0]["steps"][0]["observation"] == "solve t7"
    assert json.loads(first["action"]) == {"tool": "calc", "args": "2+2"} and first["info"]["thought"] == "use the tool"
    assert first["info"]["model_response"] == "call calc(2+2)" and first["info"]["timing"] == {"llm": 0.5}
    assert (second["observation"], second["action"], second["reward"], second["done"]) == ("tool: 4", "5", 0.0, True)
    about = second["info"]["rllm"]
    assert about["termination_reason"] == "max_turns_exceeded" and about["task"] == {"q": "2+2"}
    assert about["trajectory"]["name"] == "solver" and about["trajectory"]["uid"] == logged["trajectories"][0]["uid"]
    judge = sorted(t["reward"] for t in by_group["t7:judge"])
    assert judge == [0.25, 0.5]

    [vstep] = server.steps(val_rep.run_id)["steps"]
    assert (vstep["step"], vstep["trajectories"]) == (3, 1)

    # the run goes on: a step written since is added, the rest already present
    logger.log_episodes_batch(train[1:2], step=5, mode="train", epoch=1)
    reps2 = run_import("rllm", str(tmp_path / "logs" / "math" / "exp-1"), project="rllm-imports", url=server.url)
    again = next(r for r in reps2 if r.run_id == train_rep.run_id)
    assert (again.imported, again.already) == (2, 7)


def test_rllm_reports_what_it_cannot_read(tmp_path):
    logger = EpisodeLogger(str(tmp_path / "exp"))
    logger.log_episodes_batch([Episode(id=f"t{i}:0", trajectories=[solver(f"t{i}", 0, True)]) for i in range(2)], step=1)
    folder = tmp_path / "exp" / "episodes" / "train_step_1_epoch_0"
    gone = next(folder.glob("*_idt1_0.json"))
    gone.unlink()  # listed in batch_summary.json, missing
    [src] = KINDS["rllm"](str(tmp_path / "exp"))
    assert src.rejected == [(f"train_step_1_epoch_0/{gone.name}", "listed in batch_summary.json but missing")] and src.rows() == 1
    # an archive of the folder: the run is keyed by the archive (a re-import finds it), not the folder it was extracted to
    with tarfile.open(tmp_path / "exp.tar.gz", "w:gz") as t:
        t.add(tmp_path / "exp", arcname="exp")
    [rep] = run_import("rllm", str(tmp_path / "exp.tar.gz"), mode="offline", spool_root=str(tmp_path / "spool"))
    assert rep.source == f"{tmp_path / 'exp.tar.gz'}!train" and rep.spooled == 1
    (tmp_path / "episode.json").write_text("{}")
    with pytest.raises(ValueError, match="the rllm importer reads rLLM episode logs"):
        run_import("rllm", str(tmp_path / "episode.json"), url="http://127.0.0.1:9")
