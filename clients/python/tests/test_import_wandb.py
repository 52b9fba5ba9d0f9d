"""W&B offline runs written by the real wandb package in the test (WANDB_MODE=offline): the run's
.wandb transaction log is read (framing here, records with wandb's own protobuf classes): config,
scalars per step, histograms and text reported as not scalars, the exit code as the status; a
re-import stores nothing twice."""

import datetime
import json
import os
import subprocess
import sys

import pytest

from turnlens import cli
from turnlens.importers import run_import

pytest.importorskip("wandb")

WRITE = r"""
import wandb
run = wandb.init(project="sokoban", name="offline-fox", config={"lr": 1e-6, "group_size": 8, "ppo": {"clip": 0.2}},
                 tags=["grpo"], group="sweep-1")
for s in range(30):
    run.log({"train/reward": s / 10, "loss": 1 / (s + 1)}, step=s)
run.log({"weights": wandb.Histogram([1, 2, 3, 3]), "sample": "the policy said left", "eval": {"acc": 0.75}}, step=30)
run.config.update({"late_key": "added"})
start = run.start_time
run.finish()
import json
print(json.dumps({"start": start}))
print(run.id)
"""


def test_wandb_offline_run(server, tmp_path, capsys):
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true"}
    env.pop("WANDB_API_KEY", None)
    out = subprocess.run([sys.executable, "-c", WRITE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run_id = out.stdout.strip().splitlines()[-1]
    [folder] = (tmp_path / "wandb").glob(f"offline-run-*-{run_id}")

    assert cli.main(["import", "wandb", str(folder), "--project", "wandb-imports", "--json", "--url", server.url]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert rep["imported"] == 61 and rep["replaced"] == 0  # 30 steps x 2 + eval/acc
    assert {r["reason"] for r in rep["rejected"]} == {"W&B histogram is not a scalar (TurnLens imports scalar curves)",
                                                      "str 'the policy said left' is not a number"}
    run = server.get(f"/api/v1/runs/{rep['runId']}")
    assert run["name"] == "offline-fox" and run["status"] == "succeeded"
    c = run["config"]
    assert c["lr"] == 1e-6 and c["group_size"] == 8 and c["ppo"] == {"clip": 0.2} and c["late_key"] == "added"
    assert c["wandb"]["runId"] == run_id and c["wandb"]["project"] == "sokoban" and c["wandb"]["tags"] == ["grpo"]
    if "startedAt" in json.dumps(server.get("/api/v1/openapi.json")["components"]["schemas"].get("ImportRunInput", {})):
        start = json.loads(out.stdout.strip().splitlines()[-2])["start"]  # wandb's own run.start_time
        assert abs(datetime.datetime.fromisoformat(run["startedAt"].replace("Z", "+00:00")).timestamp() - start) < 0.002
    got = server.metrics(rep["runId"])
    assert got["train/reward"][29] == pytest.approx(2.9) and len(got["loss"]) == 30
    assert got["eval/acc"] == {30: 0.75}  # a logged dict: its leaves as a/b keys

    # the whole wandb/ folder: the same run, nothing new
    [again] = run_import("wandb", str(tmp_path / "wandb"), project="wandb-imports", url=server.url)
    assert again.run_id == rep["runId"] and (again.imported, again.already) == (0, 61)


# TRL's completions table as GRPOTrainer.log hands it to W&B (report_to="wandb": a wandb.Table of step, prompt,
# completion, a column per reward function, advantage), 2 prompts x 4 completions at each of 2 steps, with
# transformers' train/global_step beside the scalars.
TABLES = r"""
import json, statistics
import pandas as pd
import wandb

run = wandb.init(project="grpo", name="wandb-tables", config={"num_generations": 4, "reward_weights": [1.0], "scale_rewards": "group"})
logged = {}
for step in (1, 2):
    prompts = [f"prompt {step}-{p}" for p in range(2) for _ in range(4)]
    completions = [f"answer {step}.{i}" for i in range(8)]
    correct = [0.25 * ((i * (step + 1)) % 5) for i in range(8)]
    adv = []
    for g in range(2):
        block = correct[4 * g:4 * g + 4]
        m = sum(block) / 4
        adv += [(x - m) / (statistics.stdev(block) + 1e-4) for x in block]
    wandb.log({"completions": wandb.Table(dataframe=pd.DataFrame({"step": [step] * 8, "prompt": prompts, "completion": completions,
                                                                  "correct": correct, "advantage": adv}))})
    wandb.log({"train/reward": sum(correct) / 8, "train/global_step": step})
    logged[step] = {"completions": completions, "advantages": adv}
run.finish()
print(json.dumps(logged))
"""


def test_wandb_trl_completions_table(server, tmp_path):
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true"}
    env.pop("WANDB_API_KEY", None)
    out = subprocess.run([sys.executable, "-c", TABLES], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    logged = {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}

    [rep] = run_import("wandb", str(tmp_path / "wandb"), project="wandb-imports", url=server.url)
    assert rep.imported == 2 * 2 + 2 * 8 and not rep.rejected, rep.as_dict()
    steps = sorted(server.steps(rep.run_id)["steps"], key=lambda s: s["step"])
    assert [(s["step"], s["groups"], s["trajectories"], s["estimator"]) for s in steps] == [(1, 2, 8, "grpo"), (2, 2, 8, "grpo")]
    for step in (1, 2):
        trs = sorted(server.trajectories(rep.run_id, step), key=lambda t: (t["uid"], t["index"]))
        turns = [server.get(f"/api/v1/trajectories/{t['id']}")["turns"][0] for t in trs]
        assert [t["action"] for t in turns] == logged[step]["completions"]
        assert [t["advantage"] for t in turns] == logged[step]["advantages"]  # exact: as TRL logged them
    assert set(server.metrics(rep.run_id)["train/reward"]) == {1, 2}  # at the trainer's global step, not W&B's _step

    [again] = run_import("wandb", str(tmp_path / "wandb"), project="wandb-imports", url=server.url)
    assert (again.run_id, again.imported, again.already) == (rep.run_id, 0, rep.imported)

    # the .wandb log alone: its records name the table files, which are not beside it
    import shutil

    from turnlens.importers.wandb import read

    [log] = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    (tmp_path / "lone").mkdir()
    [src] = read(shutil.copy(log, tmp_path / "lone"))
    assert len(src.rejected) == 2 and all("not in the run folder (import the whole offline-run-* folder" in why for _, why in src.rejected)
