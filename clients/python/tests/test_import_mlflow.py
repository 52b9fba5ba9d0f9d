"""MLflow stores written by the real mlflow package (3.x) in the test: the SQLite store (MLflow 3's
default, sqlite:///mlflow.db) and the file store (mlruns/). Two values at one step: the later is
stored, the earlier counted as replaced (not imported); a re-import stores nothing twice; the run
keeps MLflow's own start and end times where the server takes them."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnlens import cli

pytest.importorskip("mlflow")

WRITE = r"""
import json, sys, mlflow
mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment("sokoban")
with mlflow.start_run(run_name="gentle-fox") as r:
    mlflow.log_params({"lr": 1e-6, "estimator": "gigpo", "group_size": 8})
    for s in range(5):
        mlflow.log_metric("train/reward", s / 10, step=s)
    mlflow.log_metric("train/reward", 0.99, step=4)  # a second value at step 4: MLflow keeps both
    mlflow.log_metric("loss", float("nan"), step=0)
    mlflow.log_metrics({"eval/acc": 0.5, "eval/n": 3}, step=2)
    run_id = r.info.run_id
run = mlflow.get_run(run_id)
print(json.dumps({"runId": run_id, "start": run.info.start_time, "end": run.info.end_time}))
"""


def write_store(uri: str, cwd: Path) -> dict:
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true", "GIT_PYTHON_REFRESH": "quiet"}
    out = subprocess.run([sys.executable, "-c", WRITE, uri], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def keeps_times(server) -> bool:
    """Whether this server stores a source's startedAt/finishedAt (newer servers do; older ones refuse
    the fields, and the client then imports without them)."""
    spec = server.get("/api/v1/openapi.json")
    return "startedAt" in json.dumps(spec["paths"]["/runs/import"]) + json.dumps(spec.get("components", {}).get("schemas", {}).get("ImportRunInput", {}))


def iso_ms(ms: int) -> str:
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_run(server, rep: dict, written: dict):
    assert rep["imported"] == 8 and rep["replaced"] == 1 and rep["rejected"] == []  # 5 steps + NaN loss + 2 eval; 1 replaced
    assert rep["replacedRows"][0]["reason"] == "value 0.4 replaced by the later value 0.99 at the same step"
    assert rep["replacedRows"][0]["where"].endswith(": train/reward step 4")
    run = server.get(f"/api/v1/runs/{rep['runId']}")
    assert run["name"] == "gentle-fox" and run["status"] == "succeeded"
    assert run["config"]["lr"] == 1e-06 and run["config"]["group_size"] == 8 and run["config"]["estimator"] == "gigpo"
    assert run["config"]["mlflow"]["experiment"] == "sokoban" and run["config"]["mlflow"]["runId"] == written["runId"]
    got = server.metrics(rep["runId"])
    assert got["train/reward"] == {0: 0.0, 1: 0.1, 2: 0.2, 3: pytest.approx(0.3), 4: 0.99}
    assert math.isnan(got["loss"][0]) and got["eval/acc"] == {2: 0.5} and got["eval/n"] == {2: 3}
    if keeps_times(server):
        assert run["createdAt"] == run["startedAt"] == iso_ms(written["start"])
        assert run["finishedAt"] == iso_ms(written["end"])


def test_mlflow_sqlite_store_the_mlflow3_default(server, tmp_path, capsys):
    written = write_store(f"sqlite:///{tmp_path}/mlflow.db", tmp_path)
    # the connection options after the command, as users type them
    assert cli.main(["import", "mlflow", str(tmp_path / "mlflow.db"), "--project", "mlflow-imports", "--url", server.url, "--json"]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert rep["created"]
    check_run(server, rep, written)

    # again, through the folder holding mlflow.db (MLflow's working directory): the same run, nothing new
    assert cli.main(["--url", server.url, "import", "mlflow", str(tmp_path), "--project", "mlflow-imports", "--json"]) == 0
    [again] = json.loads(capsys.readouterr().out)
    assert again["runId"] == rep["runId"] and not again["created"]
    assert (again["imported"], again["alreadyPresent"], again["replaced"]) == (0, 8, 1)
    assert len(server.metrics(rep["runId"])["train/reward"]) == 5


def test_mlflow_file_store(server, tmp_path, capsys):
    written = write_store(f"file://{tmp_path}/mlruns", tmp_path)
    assert cli.main(["import", "mlflow", str(tmp_path / "mlruns"), "--url", server.url, "--project", "mlflow-imports", "--json"]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    check_run(server, rep, written)
    assert cli.main(["import", "mlflow", str(tmp_path / "mlruns"), "--url", server.url, "--project", "mlflow-imports"]) == 0
    out = capsys.readouterr().out
    assert f"-> run {rep['runId']}: 0 rows imported, 8 already present, 1 replaced, 0 rejected" in out
    assert "replaced 'gentle-fox metrics'" not in out and "train/reward step 4: value 0.4 replaced by the later value 0.99" in out


def test_not_an_mlflow_store_says_what_it_is(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("hello\n")
    assert cli.main(["import", "mlflow", str(f), "--url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "notes.txt is a text file starting 'hello'; the mlflow importer reads an MLflow store" in err
    assert "Other formats: " in err and "chat, inspect" in err and "trackio" in err and "Traceback" not in err


# verl's rollout tracing (actor_rollout_ref.rollout.trace.backend=mlflow, token2text=True) driven through verl's own
# verl.utils.rollout_trace: rollout_trace_attr tags each agent loop's trace (step, sample_index, rollout_n, validate,
# experiment_name) and rollout_trace_op wraps the loop's run, each model call and each tool call in mlflow.start_span.
# The run named as the experiment is what verl's MLflow logger (Tracking) starts; the tokenizer decodes a toy vocabulary.
TRACES = r"""
import asyncio, json, os, sys
import mlflow
from verl.utils.rollout_trace import RolloutTraceConfig, rollout_trace_attr, rollout_trace_op

os.environ["MLFLOW_TRACKING_URI"] = sys.argv[1]
mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment("sokoban")
with mlflow.start_run(run_name="gentle-fox"):
    mlflow.log_metric("train/reward", 0.5, step=1)
RolloutTraceConfig.init("sokoban", "gentle-fox", "mlflow", token2text=True)
VOCAB = ["<s>", "Push the box. ", "look", "left", " | wall north | ", "done", "?"]


class Tok:
    def decode(self, ids):
        return "".join(VOCAB[i] for i in ids)


class Server:
    tokenizer = Tok()

    @rollout_trace_op
    async def generate(self, prompt_ids, sampling_params, request_id):
        return {"token_ids": [2] if len(prompt_ids) == 2 else [3, 5], "log_probs": [-0.5] * (1 if len(prompt_ids) == 2 else 2)}


class Tool:
    @rollout_trace_op
    async def execute(self, instance_id, parameters):
        return " | wall north | ", 0.0, {}


class ToolAgentLoop:
    tokenizer = Tok()

    @rollout_trace_op
    async def run(self, sampling_params, reward):
        server, tool = Server(), Tool()
        prompt = [0, 1]
        first = await server.generate(prompt, sampling_params, "r1")
        await tool.execute("i1", {"cmd": "look"})
        prompt2 = prompt + first["token_ids"] + [4]
        second = await server.generate(prompt2, sampling_params, "r2")
        return {"prompt_ids": prompt, "response_ids": first["token_ids"] + [4] + second["token_ids"], "reward_score": reward}


async def main():
    for step, validate in ((1, False), (2, False), (2, True)):
        for sample in range(2):
            for n in range(2):
                with rollout_trace_attr(step=step, sample_index=sample, rollout_n=n, validate=validate, name="agent_loop"):
                    await ToolAgentLoop().run({"temperature": 1.0}, reward=float(step * 10 + sample * 2 + n))

asyncio.run(main())
"""


def test_verl_rollout_traces(server, tmp_path, capsys):
    pytest.importorskip("verl")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    env = {**os.environ, "GIT_PYTHON_REFRESH": "quiet"}
    out = subprocess.run([sys.executable, "-c", TRACES, uri], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert cli.main(["import", "mlflow", str(tmp_path / "mlruns.db"), "--project", "mlflow-imports", "--url", server.url, "--json"]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert rep["imported"] == 1 + 8, rep  # the metric and the 8 training traces
    assert len(rep["rejected"]) == 4 and all(r["reason"].startswith("a validation rollout") for r in rep["rejected"])
    run = server.get(f"/api/v1/runs/{rep['runId']}")
    assert run["name"] == "gentle-fox"
    steps = {s["step"]: s for s in server.steps(rep["runId"])["steps"]}
    assert {s: (steps[s]["groups"], steps[s]["trajectories"]) for s in steps} == {1: (2, 4), 2: (2, 4)}
    for step in (1, 2):
        for t in server.trajectories(rep["runId"], step):
            full = server.get(f"/api/v1/trajectories/{t['id']}")
            tags = full["turns"][-1]["info"]["mlflow"]["tags"]
            sample, n = int(tags["sample_index"]), int(tags["rollout_n"])
            assert (full["uid"], tags["step"], tags["validate"], tags["experiment_name"]) == (f"sample-{sample}", str(step), "False", "gentle-fox")
            assert full["reward"] == step * 10 + sample * 2 + n
            turns = full["turns"]
            assert [(x["observation"], x["action"], x.get("tokenCount")) for x in turns] == \
                [("<s>Push the box. ", "look", 1), (" | wall north | ", "leftdone", 2)]
            spans = turns[-1]["info"]["spans"]
            assert [s["name"] for s in spans] == ["agent_loop", "ToolAgentLoop.run", "Server.generate", "Tool.execute", "Server.generate"]
            assert spans[1]["output"]["response_text"] == "look | wall north | leftdone"
            assert spans[1]["output"]["reward_score"] == full["reward"]
            assert spans[2]["input"]["prompt_ids"] == [0, 1] and spans[2]["output"]["prompt_text"] == "<s>Push the box. "
            assert spans[3]["input"] == {"instance_id": "i1", "parameters": {"cmd": "look"}}
            assert spans[3]["output"] == [" | wall north | ", 0.0, {}]
            assert spans[4]["output"]["log_probs"] == [-0.5, -0.5]
            assert [s["parent_id"] for s in spans[2:]] == [spans[1]["id"]] * 3 and spans[1]["parent_id"] == spans[0]["id"]
    assert cli.main(["import", "mlflow", str(tmp_path / "mlruns.db"), "--project", "mlflow-imports", "--url", server.url, "--json"]) == 0
    [again] = json.loads(capsys.readouterr().out)
    assert (again["runId"], again["imported"], again["alreadyPresent"]) == (rep["runId"], 0, 9)
