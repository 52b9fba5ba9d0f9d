"""`turnlens watch FORMAT DIR` as a subprocess while the test writes a trainer's files into DIR, a line at a time:
each step is readable from the server within 2 s of its last line (or STABLE marker); a watch stopped
(Ctrl-C) or killed (SIGKILL) and started again sends only what is new; `turnlens import` of the same
folder afterwards finds the watch's run and its steps already present.

Writers: prime-rl's own TokenExporter (not on PyPI: copied into tests/vendor/prime_rl, run as
test_import_prime_rl.py runs it); verl's dump is written by verl's own
RayPPOTrainer._write_generations (its code run from the installed package, without importing the
trainer module's GPU stack); TRL's parquet as GRPOTrainer.log writes it (pandas DataFrame.to_parquet).
"""

import ast
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from turnlens.importers import run_import

CLIENT = Path(__file__).resolve().parents[1]
LIVE = 2.0  # seconds from a step's last line to the server answering with it


class Watch:
    """`python -m turnlens.cli watch ...` in the background, its stderr in a file."""

    def __init__(self, server, tmp: Path, *args: str):
        self.log_path = tmp / f"watch-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "w")
        env = {**os.environ, "PYTHONPATH": str(CLIENT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "turnlens.cli", "watch", *args, "--url", server.url],
                                     cwd=CLIENT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        until(lambda: "following" in self.log_path.read_text())  # started: Python's start-up is not the watch's delay

    def stop(self, sig=signal.SIGINT) -> str:
        self.proc.send_signal(sig)
        rc = self.proc.wait(10)
        self.log.close()
        text = self.log_path.read_text()
        if sig == signal.SIGINT:
            assert rc == 0, text
        return text


def until(what, timeout=LIVE + 8):
    """Polls what() until it is truthy; returns (value, seconds waited)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = what()
        if v:
            return v, time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


@pytest.fixture(scope="module", autouse=True)
def warm(server, tmp_path_factory):
    """The server loads each route's code on its first request: one import first, so what is timed is the watch."""
    f = tmp_path_factory.mktemp("warm") / "warm.jsonl"
    f.write_text(json.dumps({"type": "rollouts", "step": 0, "groups": {"t": [[{"observation": "o", "action": "a", "reward": 1}],
                                                                           [{"observation": "o", "action": "b", "reward": 0}]]},
                             "estimator": "grpo"}) + "\n")
    run_import("jsonl", str(f), project="watch-warm", url=server.url)


def run_of(server, project):
    runs = server.get(f"/api/v1/runs?project={project}")["runs"]
    return runs[0]["id"] if runs else None


def stored_steps(server, run_id):
    return {s["step"]: s for s in server.steps(run_id)["steps"]} if run_id else {}


def test_prime_rl_steps_arrive_live_and_resume(server, tmp_path):
    out = tmp_path / "outputs"
    out.mkdir()
    import test_import_prime_rl as prime  # here: it needs torch, the other watch tests do not

    args = ("prime-rl", str(out), "--project", "watch-prime")
    w = Watch(server, tmp_path, *args)  # running before the trainer made token_exports/

    def write_step(step):
        """prime-rl's TokenExporter writes the step's sequences (one micro step each); the caller marks it stable."""
        exp = prime.exporter(out)
        for i, adv in enumerate((1.0, -1.0)):
            prime.export(exp, step, [([1, 2, 3], [[10 + step, 11], [7], [12]], adv)], micro_step=i)
        return exp

    for step in (1, 2):
        exp = write_step(step)
        time.sleep(0.8)
        assert step not in stored_steps(server, run_of(server, "watch-prime"))  # no STABLE yet: still being written
        exp.mark_stable()
        _, waited = until(lambda: step in stored_steps(server, run_of(server, "watch-prime")))
        assert waited < LIVE
    first = w.stop()
    run_id = run_of(server, "watch-prime")
    assert "step_1: run " + run_id + " (new): 2 row(s) sent, 0 already present" in first
    assert "step_2: run " + run_id + ": 2 row(s) sent, 0 already present" in first

    write_step(3).mark_stable()  # landed while no watch ran
    w = Watch(server, tmp_path, *args)
    until(lambda: 3 in stored_steps(server, run_id))
    until(lambda: "step_3:" in w.log_path.read_text())  # reported once recorded
    second = w.stop(signal.SIGKILL)  # killed, no goodbye
    write_step(4).mark_stable()
    w = Watch(server, tmp_path, *args)
    until(lambda: 4 in stored_steps(server, run_id))
    third = w.stop()
    assert "step_3:" in second and "step_1" not in second and "step_2" not in second
    assert "step_4: run " + run_id + ": 2 row(s) sent, 0 already present" in third and "step_3" not in third

    steps = stored_steps(server, run_id)
    assert sorted(steps) == [1, 2, 3, 4] and all(s["trajectories"] == 2 for s in steps.values())
    assert {s["estimator"] for s in steps.values()} == {"prime-rl:token-export"}
    # stored = the lines written: each sequence's two model replies (the tool's token 7 between them) and its advantage
    turns = [server.get(f"/api/v1/trajectories/{t['id']}")["turns"] for t in server.trajectories(run_id, 4)]
    assert [[x["tokens"]["ids"] for x in ts] for ts in turns] == [[[14, 11], [12]]] * 2
    assert all(ts[1]["info"]["observationTokenIds"] == [7] for ts in turns)
    assert sorted(ts[0]["tokens"]["advantages"][0] for ts in turns) == [-1.0, 1.0]

    # the import of the same folder is the same run: every row already there, and the run is finished
    [rep] = run_import("prime-rl", str(out), project="watch-prime", url=server.url)
    assert (rep.run_id, rep.imported, rep.already) == (run_id, 0, 8)
    assert server.get(f"/api/v1/runs/{run_id}")["status"] == "succeeded"


def test_generic_jsonl_line_by_line(server, tmp_path):
    f = tmp_path / "live.jsonl"
    rows = [{"type": "run", "name": "live-jsonl", "config": {"lr": 1e-6}},
            {"type": "rollouts", "step": 0, "groups": {"t0": [[{"observation": "s", "action": "a0", "reward": 1}]]}},
            {"type": "metrics", "step": 0, "values": {"train/reward": 0.5}},
            {"type": "rollouts", "step": 1, "groups": {"t0": [[{"observation": "s", "action": "a1", "reward": 0}],
                                                              [{"observation": "s", "action": "a2", "reward": 1}]]}},
            {"type": "rollouts", "step": 2, "groups": {"t1": [[{"observation": "x", "action": "b", "reward": 1}]]}},
            {"type": "finish", "status": "succeeded"}]
    text = [json.dumps(r) + "\n" for r in rows]
    fh = open(f, "w")
    args = ("jsonl", str(f), "--project", "watch-jsonl")
    w = Watch(server, tmp_path, *args)
    fh.write(text[0] + text[1])
    fh.flush()
    _, waited = until(lambda: 0 in stored_steps(server, run_of(server, "watch-jsonl")))
    assert waited < LIVE
    run_id = run_of(server, "watch-jsonl")
    run = server.get(f"/api/v1/runs/{run_id}")
    assert run["name"] == "live-jsonl" and run["config"]["lr"] == 1e-6 and run["status"] == "running"
    fh.write(text[2] + text[3][:25])  # the step 1 line half written
    fh.flush()
    until(lambda: server.metrics(run_id).get("train/reward"))
    time.sleep(0.8)
    assert 1 not in stored_steps(server, run_id)
    fh.write(text[3][25:])
    fh.flush()
    _, waited = until(lambda: 1 in stored_steps(server, run_id))
    assert waited < LIVE
    until(lambda: "live.jsonl:4-4: run" in w.log_path.read_text())  # reported once recorded
    first = w.stop(signal.SIGKILL)
    assert "rejected" not in first.replace("0 rejected", "")  # the half line was waited for, not read

    fh.write(text[4] + text[5])
    fh.close()
    w = Watch(server, tmp_path, *args)
    until(lambda: server.get(f"/api/v1/runs/{run_id}")["status"] == "succeeded")
    second = w.stop()
    assert "live.jsonl:5-6: run " + run_id + ": 1 row(s) sent, 0 already present" in second, second
    assert "live.jsonl:1" not in second and "live.jsonl:3" not in second
    steps = stored_steps(server, run_id)
    assert sorted(steps) == [0, 1, 2] and [steps[s]["trajectories"] for s in (0, 1, 2)] == [1, 2, 1]
    assert server.metrics(run_id) == {"train/reward": {0: 0.5}}
    assert sorted(t["reward"] for t in server.trajectories(run_id, 1)) == [0, 1]
    [again] = run_import("jsonl", str(f), project="watch-jsonl", url=server.url)
    assert (again.run_id, again.imported) == (run_id, 0)


def verl_writer():
    """verl's RayPPOTrainer._write_generations (a staticmethod), compiled from the installed verl's source."""
    spec = importlib.util.find_spec("verl")
    if spec is None:
        pytest.skip("verl is not installed (clients/python/tests/requirements-verl*.txt)")
    src = Path(spec.submodule_search_locations[0], "trainer", "ppo", "ray_trainer.py").read_text()
    fn = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef) and n.name == "_write_generations")
    fn.decorator_list = []
    ns = {"os": os, "json": json}
    exec(compile(ast.Module([fn], []), "ray_trainer.py", "exec"), ns)
    return ns["_write_generations"]


def test_verl_dumps_step_files(server, tmp_path):
    write = verl_writer()
    dump = tmp_path / "rollout_dump"
    w = Watch(server, tmp_path, "verl", str(dump), "--project", "watch-verl", "--quiet", "0.5")

    def step(n):
        t = threading.Thread(target=write, args=(["p1", "p1", "p2", "p2"], [f"o{n}{i}" for i in range(4)], ["g"] * 4,
                                                 [1.0, 0.0, 0.0, 1.0], {"acc": [1, 0, 0, 1]}, str(dump), n))
        t.start()
        t.join()

    step(1)
    _, waited = until(lambda: 1 in stored_steps(server, run_of(server, "watch-verl")))
    assert waited < LIVE  # quiet for 0.5 s: the last step file is complete
    step(2)
    run_id = run_of(server, "watch-verl")
    _, waited = until(lambda: 2 in stored_steps(server, run_id))
    assert waited < LIVE
    first = w.stop()
    assert "1.jsonl: run " + run_id + " (new): 4 row(s) sent" in first and "2.jsonl: run " + run_id + ": 4 row(s) sent" in first
    assert sorted(t["reward"] for t in server.trajectories(run_id, 2)) == [0, 0, 1, 1]
    assert server.metrics(run_id)["verl/score_mean"] == {1: 0.5, 2: 0.5}
    [rep] = run_import("verl", str(dump), project="watch-verl", url=server.url)
    assert (rep.run_id, rep.imported, rep.already) == (run_id, 0, 8)


def test_trl_parquet_once_written(server, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "trl-out"
    (out / "completions").mkdir(parents=True)
    rewards = [-1.0, 0.0, 0.25, 1.0]
    std = pd.Series(rewards).std()
    table = {"prompt": ["p"] * 4, "completion": [f"c{i}" for i in range(4)], "score": rewards,
             "advantage": [(r - sum(rewards) / 4) / (std + 1e-4) for r in rewards]}
    (out / "completions" / "completions_00002.parquet").write_bytes(b"PAR1\0\0\0\0")  # still being written: no footer
    w = Watch(server, tmp_path, "trl", str(out), "--project", "watch-trl")
    pd.DataFrame({"step": [1] * 4, **table}).to_parquet(out / "completions" / "completions_00001.parquet")
    _, waited = until(lambda: 1 in stored_steps(server, run_of(server, "watch-trl")))
    assert waited < LIVE
    run_id = run_of(server, "watch-trl")
    time.sleep(0.6)
    assert "completions_00002" not in w.log_path.read_text()
    w.stop(signal.SIGKILL)
    # TRL logs the same generation batch again at the next logging step: reported, stored once, across a restart too
    pd.DataFrame({"step": [2] * 4, **table}).to_parquet(out / "completions" / "completions_00002.parquet")
    w = Watch(server, tmp_path, "trl", str(out), "--project", "watch-trl")
    until(lambda: "completions_00002" in w.log_path.read_text())
    text = w.stop()
    assert "rejected completions_00002.parquet: the same generation batch as completions_00001.parquet" in text, text
    steps = stored_steps(server, run_id)
    assert sorted(steps) == [1] and steps[1]["estimator"] == "grpo" and steps[1]["trajectories"] == 4


def test_verl_file_logger_lines(server, tmp_path):
    """verl's file logger (trainer.logger=['file']) appends {"step", "data"} lines: each complete line's curves are sent,
    a line still being written waits; the run is the one `turnlens import verl-file` makes, from the same folder."""
    from turnlens.watch import Watch as Follow

    root = tmp_path / "verl_logs" / "gsm8k"
    root.mkdir(parents=True)
    f = root / "exp1.jsonl"
    lines = [json.dumps({"step": s, "data": {"critic/score/mean": s / 10, "actor/entropy": 1 - s / 10}}) + "\n" for s in (1, 2, 3)]
    f.write_text(lines[0] + lines[1] + lines[2][:10])
    w = Follow("verl-file", str(root), project="watch-verl-file", url=server.url)
    try:
        assert w.poll() == 1
        run_id = run_of(server, "watch-verl-file")
        assert server.metrics(run_id)["critic/score/mean"] == {1: 0.1, 2: 0.2}
        assert w.poll() == 0  # the third line has no newline yet
        with open(f, "a") as fh:
            fh.write(lines[2][10:])
        assert w.poll() == 1
    finally:
        w.close()
    assert server.metrics(run_id)["actor/entropy"] == {1: 0.9, 2: 0.8, 3: 0.7}
    run = server.get(f"/api/v1/runs/{run_id}")
    assert run["name"] == "exp1" and run["config"]["project"] == "gsm8k"
    # the import finds the same run; its one batch of the 6 values (the watch sent two) is stored over the same points
    [rep] = run_import("verl-file", str(root), project="watch-verl-file", url=server.url)
    assert rep.run_id == run_id and rep.imported + rep.already == 6
    assert server.metrics(run_id) == {"critic/score/mean": {1: 0.1, 2: 0.2, 3: 0.3}, "actor/entropy": {1: 0.9, 2: 0.8, 3: 0.7}}
