"""A JSON-lines source whose only row is a line too long to import: the import names that line, its
size and the limit, on the command line and in the error the dashboard's import job reports (the
CLI's last `turnlens import:` line), instead of "nothing importable, 0 rejected"."""

import json

from turnlens import cli
from turnlens.importers.base import MAX_LINE


def test_an_overlong_line_is_named_with_its_size_and_the_limit(tmp_path, capsys):
    f = tmp_path / "big.jsonl"
    with open(f, "wb") as out:
        out.write(json.dumps({"type": "run", "name": "big"}).encode() + b"\n")
        row = json.dumps({"type": "metrics", "step": 0, "values": {"x": 1}, "pad": ""}).encode()
        out.write(row[:-2] + b"x" * (MAX_LINE + (1 << 20)) + b'"}\n')
    assert cli.main(["import", "jsonl", str(f), "--offline", "--spool", str(tmp_path / "spool")]) == 1
    last = [line for line in capsys.readouterr().err.splitlines() if line.startswith("turnlens import: ")][-1]
    assert "nothing importable" in last and "1 row(s) rejected" in last
    assert "big.jsonl:2: line 2 is 65.0 MB, longer than the 64.0 MB a line may hold" in last
    assert not (tmp_path / "spool").exists() or not any((tmp_path / "spool").iterdir())
