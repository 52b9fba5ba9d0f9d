"""OpenAI-style chat JSONL (one trajectory per line), and what every import shares on the command
line: --url/--token/--write-key anywhere, an all-rejected file making no run, another machine's
re-import needing the run's write key, an unsupported file named for what it is."""

import json
import sqlite3
import sys

import pytest

from turnlens import cli
from turnlens.importers import run_import


def chat_line(prompt, answers, reward, **extra):
    msgs = [{"role": "system", "content": "You play Sokoban."}, {"role": "user", "content": prompt}]
    for i, a in enumerate(answers):
        msgs.append({"role": "assistant", "content": a})
        if i < len(answers) - 1:
            msgs.append({"role": "user", "content": f"board after {a}"})
    return json.dumps({"messages": msgs, "reward": reward, **extra})


def write_chat(f):
    lines = [chat_line("level 1", ["left", "up"], 1.0, step=0), chat_line("level 1", ["down"], 0.0, step=0),
             chat_line("level 2", ["right"], 0.5, step=0, id="x7"),
             json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": "level 3"}]},
                                      {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "push", "arguments": "{}"}}]},
                                      {"role": "tool", "content": "pushed"}, {"role": "assistant", "content": "done", "reward": 0.25}],
                         "reward": 1.0, "group": "g3", "step": 1}),
             "", "{oops", json.dumps({"messages": [{"role": "user", "content": "hi"}], "reward": 1}),
             json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}),
             json.dumps({"messages": [{"content": "no role"}], "reward": 1})]
    f.write_text("\n".join(lines) + "\n")


def test_chat_jsonl(server, tmp_path):
    f = tmp_path / "rollouts.jsonl"
    write_chat(f)
    [rep] = run_import("chat", str(f), project="chat-imports", url=server.url)
    assert rep.imported == 4
    assert dict(rep.rejected) == {
        "rollouts.jsonl:6": "not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        "rollouts.jsonl:7": "messages: no assistant message (nothing the policy did)",
        "rollouts.jsonl:8": "reward: required",
        "rollouts.jsonl:9": "messages[0]: expected an object with a role",
    }
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert steps[0]["groups"] == 2 and steps[0]["trajectories"] == 3  # grouped by prompt: level 1 (two tries), level 2
    assert steps[1]["groups"] == 1 and steps[1]["trajectories"] == 1
    trs = server.trajectories(rep.run_id, 0)
    two = next(t for t in trs if t["reward"] == 1.0)
    full = server.get(f"/api/v1/trajectories/{two['id']}")
    assert [(t["observation"], t["action"], t["reward"]) for t in full["turns"]] == [
        ("system: You play Sokoban.\n\nuser: level 1", "left", 0.0), ("user: board after left", "up", 1.0)]
    [g3] = server.trajectories(rep.run_id, 1)
    assert g3["uid"] == "g3"
    turns = server.get(f"/api/v1/trajectories/{g3['id']}")["turns"]
    assert turns[0]["action"] == '[{"function": {"arguments": "{}", "name": "push"}, "type": "function"}]'
    assert turns[1]["observation"] == "tool: pushed" and turns[1]["reward"] == 0.25  # the message's own reward

    [again] = run_import("chat", str(f), project="chat-imports", url=server.url)
    assert again.run_id == rep.run_id and (again.imported, again.already) == (0, 4)


def test_all_rejected_makes_no_run(server, tmp_path, capsys):
    f = tmp_path / "bad.jsonl"
    f.write_text("{oops\n" + json.dumps({"messages": [], "reward": 1}) + "\n")
    assert cli.main(["import", "chat", str(f), "--project", "empty-imports", "--url", server.url]) == 1
    err = capsys.readouterr().err
    assert "nothing importable (every row was rejected or the source is empty): no run created; 2 row(s) rejected" in err
    assert "bad.jsonl:2: messages: expected a non-empty list of {role, content}" in err
    assert server.get("/api/v1/runs?project=empty-imports")["total"] == 0
    # offline too: no spool
    assert cli.main(["import", "chat", str(f), "--offline", "--spool", str(tmp_path / "spool")]) == 1
    assert not (tmp_path / "spool").exists() or not any((tmp_path / "spool").iterdir())


def test_options_anywhere_and_the_write_key_of_another_machine(server, tmp_path, monkeypatch, capsys):
    f = tmp_path / "grow.jsonl"
    f.write_text(chat_line("level 1", ["left"], 1.0, step=0) + "\n")
    monkeypatch.setenv("TURNLENS_DIR", str(tmp_path / "machine-a"))
    # before the command, as `turnlens --url X import ...`
    assert cli.main(["--url", server.url, "--token", "t0ken", "--json", "import", "chat", str(f), "--project", "keys"]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    key = (tmp_path / "machine-a" / "keys" / rep["runId"]).read_text().strip()

    f.write_text(f.read_text() + chat_line("level 2", ["up"], 0.0, step=1) + "\n")  # the trainer wrote another step since
    monkeypatch.setenv("TURNLENS_DIR", str(tmp_path / "machine-b"))  # another machine: no key there
    assert cli.main(["import", "chat", str(f), "--project", "keys", "--url", server.url]) == 2
    err = capsys.readouterr().err
    assert f"run {rep['runId']} (made by an earlier import of this source) refused the write key (this machine has none" in err
    assert "pass that run's key with --write-key KEY" in err and "Traceback" not in err

    # after the command, each option in any place
    assert cli.main(["import", "--write-key", key, "chat", str(f), "--token", "t0ken", "--project", "keys", "--url", server.url, "--json"]) == 0
    [again] = json.loads(capsys.readouterr().out)
    assert again["runId"] == rep["runId"] and (again["imported"], again["alreadyPresent"]) == (1, 1)
    assert (tmp_path / "machine-b" / "keys" / rep["runId"]).read_text() == key  # kept for the next import on this machine
    assert cli.main(["import", "chat", str(f), "--project", "keys", "--url", server.url]) == 0
    assert "0 rows imported, 2 already present" in capsys.readouterr().out
    monkeypatch.setenv("TURNLENS_DIR", str(tmp_path / "machine-c"))
    assert cli.main(["import", "chat", str(f), "--project", "keys", "--write-key", "not-the-key", "--url", server.url]) == 2
    assert "refused the write key given with --write-key" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["chat", "tensorboard", "trackio", "wandb", "inspect", "mlflow", "jsonl", "prime-rl"])
def test_unsupported_file_says_what_it_is(tmp_path, capsys, kind):
    db = tmp_path / "model.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE weights (x)")
    con.commit()
    con.close()
    code = cli.main(["import", kind, str(db), "--url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code in (1, 2) and "Traceback" not in err and str(tmp_path) not in err.replace(f"{tmp_path}/model.sqlite", "")
    assert "model.sqlite" in err
    assert "model.sqlite is an SQLite database with tables weights; the " + kind + " importer reads" in err


@pytest.mark.parametrize("kind,module,pkg", [("wandb", "wandb", "wandb"), ("inspect", "inspect_ai", "inspect-ai")])
def test_a_missing_reader_package_is_named(tmp_path, capsys, monkeypatch, kind, module, pkg):
    f = tmp_path / ("run-abc.wandb" if kind == "wandb" else "log.eval")
    f.write_bytes(b":W&B\xe1\xbe\x00" if kind == "wandb" else b"PK\x05\x06" + b"\0" * 18)
    for name in [module] + [m for m in sys.modules if m.startswith(module + ".")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it raises ImportError
    assert cli.main(["import", kind, str(f), "--url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert f"needs the {pkg} package: pip install {pkg}" in err and "Traceback" not in err


def test_a_request_the_server_refuses_is_kept_for_sync_and_the_run_stays_open(tmp_path):
    import shutil
    import tempfile
    from pathlib import Path

    from conftest import Server
    from turnlens.sync import sync

    f = tmp_path / "big.jsonl"
    big = chat_line("level 9", ["x" * 150_000] * 10, 1.0, step=1)  # 1.5 MB: over a 1 MB body limit
    f.write_text("\n".join([chat_line("level 1", ["left"], 1.0, step=0), big]) + "\n")
    work = Path(tempfile.mkdtemp(prefix="turnlens-import-refused-"))
    s = Server(work)
    s.env["TURNLENS_MAX_BODY_MB"] = "1"
    try:
        s.start()
        [rep] = run_import("chat", str(f), project="chat-refused", url=s.url)
        assert rep.imported == 1 and "larger than" in rep.rejected[0][1]
        assert rep.kept and "turnlens sync" in rep.summary()
        refused = [json.loads(line) for line in (Path(rep.kept) / "refused.jsonl").read_text().splitlines()]
        assert [r["kind"] for r in refused] == ["steps", "finish"]
        assert s.get(f"/api/v1/runs/{rep.run_id}")["status"] == "running"  # not everything arrived: not finished
        s.env.pop("TURNLENS_MAX_BODY_MB")
        s.restart()
        [done] = sync(rep.kept, s.url)
        assert done["pending"] == 0 and done["sent"] == 2 and done["runId"] == rep.run_id
        assert s.get(f"/api/v1/runs/{rep.run_id}")["status"] == "succeeded"
        assert [t["length"] for t in s.trajectories(rep.run_id, 1)] == [10]
        assert sync(rep.kept, s.url)[0]["sent"] == 0  # nothing sent twice
    finally:
        s.kill()
        shutil.rmtree(work, ignore_errors=True)
