"""Importers on files the tests write in each format: malformed rows are reported (not fatal),
and a second import of the same files stores nothing twice."""

import json
import math
import struct
from pathlib import Path

import pytest

from turnlens import cli
from turnlens.importers import run_import
from turnlens.importers.tensorboard import _py_crc32c, crc32c, masked_crc


def reasons(report):
    return [r for _, r in report.rejected]


# ------------------------------------------------------------------ verl rollout dumps


def write_verl_dump(d: Path):
    d.mkdir()
    for step in (1, 2):
        lines = []
        for p in range(3):  # 3 prompts x 4 samples
            for k in range(4):
                lines.append(json.dumps({"input": f"prompt {p}: 2+{p}=?", "output": f"answer {k}", "gts": str(2 + p),
                                         "score": float(k == p), "step": step, "acc": float(k == p), "format_ok": True}))
        if step == 2:
            lines.insert(3, "{not json")
            lines.insert(5, json.dumps({"input": "x", "output": "y", "step": 2}))  # no score
            lines.append(json.dumps({"input": "x", "output": "y", "score": "high", "step": 2}))
        (d / f"{step}.jsonl").write_text("\n".join(lines) + "\n")


def test_verl_dump_groups_by_input_and_reimports_without_duplicates(server, tmp_path):
    write_verl_dump(tmp_path / "rollouts")
    [rep] = run_import("verl", str(tmp_path / "rollouts"), project="imports", url=server.url)
    assert rep.created and rep.imported == 24 and rep.already == 0
    assert len(rep.rejected) == 3
    assert any("not valid JSON" in r for r in reasons(rep))
    assert any(r == "score: required" for r in reasons(rep))
    assert any(r.startswith("score: expected a number") for r in reasons(rep))
    assert all(w.startswith("2.jsonl:") for w, _ in rep.rejected)

    steps = server.steps(rep.run_id)
    assert sorted(s["step"] for s in steps["steps"]) == [1, 2]
    assert all(s["groups"] == 3 and s["trajectories"] == 12 for s in steps["steps"])
    trs = server.trajectories(rep.run_id, 1)
    by_uid = {}
    for t in trs:
        by_uid.setdefault(t["uid"], []).append(t)
    assert sorted(len(v) for v in by_uid.values()) == [4, 4, 4]
    full = server.get(f"/api/v1/trajectories/{trs[0]['id']}")
    turn = full["turns"][0]
    assert turn["observation"].startswith("prompt ") and turn["info"]["gts"] and turn["info"]["acc"] in (0.0, 1.0)
    assert server.metrics(rep.run_id)["verl/score_mean"] == {1: pytest.approx(0.25), 2: pytest.approx(0.25)}

    [again] = run_import("verl", str(tmp_path / "rollouts"), project="imports", url=server.url)
    assert again.run_id == rep.run_id and not again.created
    assert again.imported == 0 and again.already == 24
    assert server.steps(rep.run_id)["total"] == 2 and len(server.trajectories(rep.run_id, 1)) == 12

    # the trainer wrote another step since: only it is new
    (tmp_path / "rollouts" / "3.jsonl").write_text(json.dumps({"input": "q", "output": "a", "score": 1.0, "step": 3}) + "\n")
    [third] = run_import("verl", str(tmp_path / "rollouts"), project="imports", url=server.url)
    assert third.run_id == rep.run_id and third.imported == 1 and third.already == 24
    assert server.steps(rep.run_id)["total"] == 3


# ------------------------------------------------------------------ TensorBoard event files


def _varint(n: int) -> bytes:
    out = b""
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def _field(num: int, wire: int, payload: bytes) -> bytes:
    key = _varint(num << 3 | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def tb_event(step: int, wall: float, scalars=(), tensors=(), histos=()) -> bytes:
    values = b""
    for tag, v in scalars:  # TF1 / tensorboardX / torch: simple_value
        values += _field(1, 2, _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", v)))
    for tag, dtype, content in tensors:  # TF2: a scalar TensorProto
        tensor = _field(1, 0, _varint(dtype)) + _field(2, 2, b"") + _field(4, 2, content)
        values += _field(1, 2, _field(1, 2, tag.encode()) + _field(8, 2, tensor))
    for tag in histos:
        values += _field(1, 2, _field(1, 2, tag.encode()) + _field(5, 2, _field(1, 1, struct.pack("<d", 0.0))))  # histo = 5
    ev = _field(1, 1, struct.pack("<d", wall)) + _field(2, 0, _varint(step))
    if values:
        ev += _field(5, 2, values)
    return ev


def tf_record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc(header)) + data + struct.pack("<I", masked_crc(data))


def test_crc32c_known_answer():
    assert crc32c(b"123456789") == _py_crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)


def test_tensorboard_scalars_tf1_and_tf2_and_a_corrupt_tail(server, tmp_path):
    logdir = tmp_path / "tb" / "run_a"
    logdir.mkdir(parents=True)
    recs = [tf_record(_field(1, 1, struct.pack("<d", 1.7e9)) + _field(3, 2, b"brain.Event:2"))]
    for step in range(50):
        recs.append(tf_record(tb_event(step, 1.7e9 + step, scalars=[("train/loss", 1.0 / (step + 1)), ("lr rate", 0.001)],
                                       tensors=[("eval/acc", 1, struct.pack("<f", step / 100)), ("eval/n", 9, struct.pack("<q", step))])))
    recs.append(tf_record(tb_event(50, 1.7e9 + 50, histos=["weights"], scalars=[("train/loss", float("nan"))])))
    good = b"".join(recs)
    bad = tf_record(tb_event(51, 1.7e9, scalars=[("train/loss", 9.0)]))
    bad = bad[:-1] + bytes([bad[-1] ^ 0xFF])  # flipped checksum byte
    (logdir / "events.out.tfevents.1700000000.host.1.0").write_bytes(good + bad + tf_record(tb_event(52, 1.7e9, scalars=[("x", 1.0)])))

    [rep] = run_import("tensorboard", str(tmp_path / "tb"), project="imports", url=server.url)
    assert rep.imported == 201  # 50 steps x 4 scalars, and the NaN loss (kept as NaN, as the trainer logged it)
    got = server.metrics(rep.run_id)
    assert set(got) == {"train/loss", "lr_rate", "eval/acc", "eval/n"}
    assert got["train/loss"][49] == pytest.approx(1 / 50, rel=1e-6)
    assert got["eval/acc"][10] == pytest.approx(0.1, rel=1e-6) and got["eval/n"][7] == 7
    rs = reasons(rep)
    assert any("histogram summary is not a scalar" in r for r in rs)
    assert math.isnan(got["train/loss"][50])
    assert any("checksum mismatch" in r for r in rs)
    assert 51 not in got["train/loss"] and "x" not in got  # nothing read past the corrupt record

    [again] = run_import("tensorboard", str(tmp_path / "tb"), project="imports", url=server.url)
    assert again.run_id == rep.run_id and again.imported == 0 and again.already == 201
    # the NaN is kept beside the series (the export has it), not counted as a plotted point
    assert [k["count"] for k in server.get(f"/api/v1/runs/{rep.run_id}/metrics")["keys"]] == [50, 50, 50, 50]


# ------------------------------------------------------------------ MLflow file store


def write_mlruns(root: Path):
    exp = root / "1"
    run = exp / "abc123"
    (run / "metrics" / "train").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (exp / "meta.yaml").write_text("artifact_location: file:///x\nexperiment_id: '1'\nlifecycle_stage: active\nname: sokoban\n")
    (run / "meta.yaml").write_text("artifact_uri: file:///x\nexperiment_id: '1'\nrun_id: abc123\nrun_name: gentle-fox\nstatus: 3\n")
    (run / "params" / "lr").write_text("1e-06")
    (run / "params" / "estimator").write_text("gigpo")
    (run / "params" / "group_size").write_text("8")
    (run / "tags" / "mlflow.runName").write_text("gentle-fox")
    (run / "metrics" / "train" / "reward").write_text("".join(f"{1700000000000 + s} {s / 10} {s}\n" for s in range(30)) + "garbage line\n1700000000000 abc 31\n")
    (run / "metrics" / "loss").write_text("".join(f"{1700000000000 + s} {1 / (s + 1)} {s}\n" for s in range(30)))


def test_mlflow_store_params_and_histories(server, tmp_path, capsys):
    write_mlruns(tmp_path / "mlruns")
    code = cli.main(["--url", server.url, "--json", "import", "mlflow", str(tmp_path / "mlruns"), "--project", "imports"])
    assert code == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert rep["imported"] == 60 and len(rep["rejected"]) == 2
    assert {r["where"] for r in rep["rejected"]} == {"metrics/train/reward:31", "metrics/train/reward:32"}
    run = server.get(f"/api/v1/runs/{rep['runId']}")
    assert run["name"] == "gentle-fox" and run["status"] == "succeeded"
    assert run["config"]["lr"] == 1e-06 and run["config"]["group_size"] == 8 and run["config"]["estimator"] == "gigpo"
    assert run["config"]["mlflow"]["experiment"] == "sokoban"
    got = server.metrics(rep["runId"])
    assert got["train/reward"][29] == pytest.approx(2.9) and len(got["loss"]) == 30

    assert cli.main(["--url", server.url, "import", "mlflow", str(tmp_path / "mlruns"), "--project", "imports"]) == 0
    out = capsys.readouterr().out
    assert f"-> run {rep['runId']}: 0 rows imported, 60 already present, 0 replaced, 2 rejected" in out
    assert "metrics/train/reward:31: timestamp: 'garbage' is not a number" in out
    assert "metrics/train/reward:32: value: 'abc' is not a number" in out


# ------------------------------------------------------------------ generic JSONL


def test_generic_jsonl(server, tmp_path):
    f = tmp_path / "my-run.jsonl"
    lines = [json.dumps({"type": "run", "name": "jsonl-run", "config": {"lr": 3e-4}, "envId": "sokoban", "estimator": "grpo"})]
    lines += [json.dumps({"type": "metrics", "step": s, "values": {"train/reward": s / 10}}) for s in range(20)]
    lines.append(json.dumps({"type": "rollouts", "step": 0, "groups": {"g0": [[{"observation": "o", "action": "a", "reward": 1, "anchor": "A"}],
                                                                           [{"observation": "o", "action": "b", "reward": 0, "anchor": "A"}]]}}))
    lines += ["", "[1, 2]", json.dumps({"type": "metrics", "step": 1, "values": {"bad key": 1}}), json.dumps({"type": "weird"}),
              json.dumps({"type": "rollouts", "step": 1, "groups": {"g0": [[{"observation": "o"}]]}})]
    lines.append(json.dumps({"type": "finish", "status": "failed"}))
    f.write_text("\n".join(lines) + "\n")
    [rep] = run_import("jsonl", str(f), project="imports", url=server.url)
    assert rep.imported == 21 and len(rep.rejected) == 4
    assert dict(rep.rejected) == {
        "my-run.jsonl:24": "expected a JSON object",
        "my-run.jsonl:25": "values['bad key']: metric key 'bad key' must be 1-200 of ASCII letters, digits, _ . - / (e.g. rollout/success_rate)",
        "my-run.jsonl:26": "type: expected run, metrics, rollouts or finish, got 'weird'",
        "my-run.jsonl:27": "groups[g0][0].turns[0].reward: required",
    }
    run = server.get(f"/api/v1/runs/{rep.run_id}")
    assert run["name"] == "jsonl-run" and run["status"] == "failed" and run["envId"] == "sokoban"
    assert len(server.metrics(rep.run_id)["train/reward"]) == 20
    assert server.steps(rep.run_id)["total"] == 1
    [again] = run_import("jsonl", str(f), project="imports", url=server.url)
    assert again.run_id == rep.run_id and (again.imported, again.already) == (0, 21)


def test_empty_folder_says_nothing_to_import(tmp_path, capsys):
    """A folder without one file of the format: exit 2 and say so (not a silent success)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["import", "jsonl", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"nothing to import in {empty}" in err, err


def test_name_on_reimport_is_reported_not_dropped(server, tmp_path, capsys):
    """--name on a re-import that finds the run an earlier import made: the run keeps its name (a run's name cannot
    be changed) and the report says so."""
    f = tmp_path / "named.jsonl"
    f.write_text(json.dumps({"type": "metrics", "step": 0, "values": {"train/reward": 0.5}}) + "\n")
    assert cli.main(["import", "jsonl", str(f), "--project", "imports", "--name", "first-name", "--url", server.url]) == 0
    capsys.readouterr()
    assert cli.main(["import", "jsonl", str(f), "--project", "imports", "--name", "second-name", "--json", "--url", server.url]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert server.get(f"/api/v1/runs/{rep['runId']}")["name"] == "first-name"
    assert rep["note"].startswith("--name 'second-name' not applied") and "'first-name'" in rep["note"], rep
    # the same name again: nothing to say
    assert cli.main(["import", "jsonl", str(f), "--project", "imports", "--name", "first-name", "--json", "--url", server.url]) == 0
    assert "note" not in json.loads(capsys.readouterr().out)[0]
