"""TensorBoard event files written by the real writers in the test (torch.utils.tensorboard's
SummaryWriter, which uses the tensorboard package's protobufs): scalars become curves; histograms
and text are reported as what they are (not as another kind), never imported as numbers; a
re-import stores nothing twice; the run keeps the first and last wall time of the events."""

import json
import struct
import time

import pytest

from turnlens.importers import run_import
from turnlens.importers.base import iso
from turnlens.importers.tensorboard import read

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")


def test_summary_writer_scalars_histograms_and_text(server, tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    t0 = time.time()
    w = SummaryWriter(log_dir=str(tmp_path / "runs" / "ppo-1"))
    for step in range(20):
        w.add_scalar("train/loss", 1.0 / (step + 1), step)
        w.add_scalars("rates", {"lr": 1e-3, "clip": 0.2}, step)  # written to sub-folders rates_lr/, rates_clip/
        if step % 5 == 0:
            w.add_histogram("weights/fc1", torch.randn(100), step)
            w.add_text("samples", f"the policy said {step}", step)
    w.add_scalar("train/loss", 9.0, 19)  # a second value at step 19: the later one wins
    w.close()

    reps = run_import("tensorboard", str(tmp_path / "runs"), project="tb-imports", url=server.url)
    by_name = {server.get(f"/api/v1/runs/{r.run_id}")["name"]: r for r in reps}
    assert set(by_name) == {"runs/ppo-1", "runs/ppo-1/rates_lr", "runs/ppo-1/rates_clip"}
    main = by_name["runs/ppo-1"]
    assert main.imported == 20 and len(main.replaced) == 1
    f32 = struct.unpack("<f", struct.pack("<f", 1 / 20))[0]  # simple_value is a float32
    assert main.replaced[0][1] == f"value {f32!r} replaced by the later value 9.0 at the same step"
    reasons = [r for _, r in main.rejected]
    assert sum("histogram summary is not a scalar" in r for r in reasons) == 4
    assert sum(r.startswith("text summary is not a scalar") for r in reasons) == 4
    assert not any("audio" in r for r in reasons)  # histograms were once misnamed audio
    got = server.metrics(main.run_id)
    assert set(got) == {"train/loss"} and got["train/loss"][19] == 9.0 and got["train/loss"][0] == 1.0
    assert server.metrics(by_name["runs/ppo-1/rates_lr"].run_id)["rates"] == {s: pytest.approx(1e-3) for s in range(20)}
    [src] = [x for x in read(str(tmp_path / "runs" / "ppo-1")) if x.name == "ppo-1"]
    assert t0 - 1 <= src.started_at <= src.finished_at <= time.time() + 1  # the events' own wall times
    run = server.get(f"/api/v1/runs/{main.run_id}")
    if "startedAt" in json.dumps(server.get("/api/v1/openapi.json")["components"]["schemas"].get("ImportRunInput", {})):
        assert (run["startedAt"], run["finishedAt"]) == (iso(src.started_at), iso(src.finished_at))  # not the import's time

    again = run_import("tensorboard", str(tmp_path / "runs"), project="tb-imports", url=server.url)
    assert sorted((r.run_id, r.imported, r.already) for r in again) == sorted((r.run_id, 0, r.imported) for r in reps)
    assert len(server.metrics(main.run_id)["train/loss"]) == 20



def test_current_folder_names_the_run(server, tmp_path, monkeypatch, capsys):
    """`turnlens import tensorboard .` (and an event file given by its bare name) inside the log folder: the run is
    named after the folder, not "" (Path(".").name), which the server refuses."""
    from torch.utils.tensorboard import SummaryWriter

    from turnlens import cli

    logdir = tmp_path / "ppo-here"
    w = SummaryWriter(log_dir=str(logdir))
    for step in range(3):
        w.add_scalar("train/loss", 1.0 / (step + 1), step)
    w.close()
    monkeypatch.chdir(logdir)
    [event_file] = [p.name for p in logdir.iterdir() if "tfevents" in p.name]
    for path in (".", event_file):
        assert cli.main(["import", "tensorboard", path, "--project", "tb-dot", "--json", "--url", server.url]) == 0, capsys.readouterr().err
        [rep] = json.loads(capsys.readouterr().out)
        assert server.get(f"/api/v1/runs/{rep['runId']}")["name"] == "ppo-here"
