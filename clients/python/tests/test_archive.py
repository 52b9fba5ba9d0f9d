"""Archives given to `turnlens import` (and uploaded on the dashboard's import page): extracted
safely or refused naming the member; --offline writes spools that `turnlens sync` uploads."""

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from turnlens import cli
from turnlens.sync import sync as sync_spool
from turnlens.importers import run_import
from turnlens.importers.archive import ArchiveError, extract

ROW = b'{"input": "q", "output": "a", "score": 1, "step": 1}\n'


def tar_with(path: Path, members):
    with tarfile.open(path, "w:gz") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def file_member(name: str, data: bytes = ROW):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    return i, data


@pytest.mark.parametrize("name", ["../escaped.jsonl", "dump/../../escaped.jsonl", "/tmp/abs.jsonl"])
def test_paths_out_of_the_folder_are_refused(tmp_path, name):
    a = tar_with(tmp_path / "evil.tar.gz", [file_member("dump/1.jsonl"), file_member(name)])
    with pytest.raises(ArchiveError, match="path traversal|absolute path"):
        extract(str(a), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # removed again, with what was extracted before the refusal
    assert not (tmp_path / "escaped.jsonl").exists()


def test_links_and_special_files_are_refused(tmp_path):
    sym = tarfile.TarInfo("dump/1.jsonl")
    sym.type, sym.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(ArchiveError, match="links are refused"):
        extract(str(tar_with(tmp_path / "sym.tar.gz", [(sym, None)])), str(tmp_path / "o1"))
    hard = tarfile.TarInfo("dump/2.jsonl")
    hard.type, hard.linkname = tarfile.LNKTYPE, "dump/1.jsonl"
    with pytest.raises(ArchiveError, match="links are refused"):
        extract(str(tar_with(tmp_path / "hard.tar.gz", [file_member("dump/1.jsonl"), (hard, None)])), str(tmp_path / "o2"))
    fifo = tarfile.TarInfo("dump/pipe")
    fifo.type = tarfile.FIFOTYPE
    with pytest.raises(ArchiveError, match="only files and folders"):
        extract(str(tar_with(tmp_path / "fifo.tar.gz", [(fifo, None)])), str(tmp_path / "o3"))
    z = tmp_path / "sym.zip"
    with zipfile.ZipFile(z, "w") as zf:
        info = zipfile.ZipInfo("dump/1.jsonl")
        info.external_attr = (0o120777 << 16)  # a symlink, as zip -y stores it
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="links are refused"):
        extract(str(z), str(tmp_path / "o4"))


def test_size_and_file_count_limits_hold_whatever_the_headers_claim(tmp_path):
    z = tmp_path / "bomb.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("dump/1.jsonl", b"0" * (8 << 20))  # 8 MB of zeros: a few KB compressed
    assert z.stat().st_size < 100_000
    with pytest.raises(ArchiveError, match="expands to more than 1 MB"):
        extract(str(z), str(tmp_path / "o1"), max_bytes=1 << 20)
    assert not (tmp_path / "o1").exists()
    many = tar_with(tmp_path / "many.tar.gz", [file_member(f"dump/{i}.jsonl") for i in range(20)])
    with pytest.raises(ArchiveError, match="more than 10 files"):
        extract(str(many), str(tmp_path / "o2"), max_files=10)
    ok = extract(str(many), str(tmp_path / "o3"), max_files=20)
    assert len(list((ok / "dump").iterdir())) == 20


def test_a_zip_bomb_is_refused_by_its_headers_naming_the_member_before_anything_is_written(tmp_path):
    z = tmp_path / "bomb.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("dump/1.jsonl", ROW * 100)
        zf.writestr("dump/2.jsonl", bytes(64 << 20))  # 64 MB of zeros: ~64 KB of deflate
    assert z.stat().st_size < 200_000
    with pytest.raises(ArchiveError, match=r"archive member 'dump/2\.jsonl': \d+ bytes that expand to 67108864 \(more than 200 times; "
                                           r"limit TURNLENS_IMPORT_MAX_RATIO\): refused as a zip bomb"):
        extract(str(z), str(tmp_path / "o1"))
    assert not (tmp_path / "o1").exists()
    # the members' declared sizes add up past the limit: refused before the first is written
    with pytest.raises(ArchiveError, match=r"expands to more than 32 MB .* refused at 'dump/2\.jsonl'"):
        extract(str(z), str(tmp_path / "o2"), max_bytes=32 << 20, max_ratio=1e9)
    assert not (tmp_path / "o2").exists()
    # a small member may compress well (up to 1 MB is not held to the ratio), and a lower ratio can be allowed
    ok = extract(str(z), str(tmp_path / "o3"), max_ratio=1e9)
    assert (ok / "dump" / "2.jsonl").stat().st_size == 64 << 20


def test_json_lines_are_read_a_line_at_a_time_and_an_overlong_line_is_rejected(tmp_path):
    from turnlens.importers.base import Source, json_objects, text_lines

    f = tmp_path / "1.jsonl"
    sep = "\u2028".encode()  # a raw line separator inside a JSON string: not a line break in JSON lines
    f.write_bytes(ROW + b"x" * (3 << 20) + b"\n" + ROW.replace(b"\n", b"\r\n") + b'{"a": "' + sep + b'"}\n')
    src = Source(name="n", config={}, key="k")
    lines = list(text_lines(f, src, f.name, max_line=1 << 20))
    assert [n for n, _ in lines] == [1, 3, 4]  # line 2 skipped unread, the numbering kept
    assert lines[1][1] == ROW.decode().rstrip("\n") and lines[2][1] == '{"a": "\u2028"}'
    assert src.rejected == [("1.jsonl:2", "line 2 is 3.0 MB, longer than the 1.0 MB a line may hold (the server's body limit: "
                                          "no request could carry it); skipped")]
    rows = [row for _, row in json_objects(f, Source(name="n", config={}, key="k"))]
    assert rows == [json.loads(ROW), json.loads(ROW), {"a": "\u2028"}]  # the long line is not JSON: rejected, not fatal


def test_a_damaged_archive_is_a_clear_error(tmp_path):
    good = tar_with(tmp_path / "t.tar.gz", [file_member("dump/1.jsonl")])
    (tmp_path / "cut.tar.gz").write_bytes(good.read_bytes()[:40])
    with pytest.raises(ArchiveError, match="damaged or unreadable|not a tar or zip"):
        extract(str(tmp_path / "cut.tar.gz"), str(tmp_path / "o"))


def test_cli_reports_a_refused_archive_and_exits_2(tmp_path, capsys):
    a = tar_with(tmp_path / "evil.tar.gz", [file_member("../x.jsonl")])
    assert cli.main(["import", "verl", str(a), "--offline", "--spool", str(tmp_path / "spool")]) == 2
    assert "'..' in the path refused (path traversal)" in capsys.readouterr().err


def test_offline_import_of_an_archive_writes_a_spool_that_sync_uploads_once(server, tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "1.jsonl").write_bytes(ROW + b'{"input": "q", "output": "b", "score": 0, "step": 1}\nnot json\n')
    (dump / "2.jsonl").write_bytes(b'{"input": "r", "output": "c", "score": 1, "step": 2}\n')
    a = tmp_path / "dump.zip"
    with zipfile.ZipFile(a, "w") as zf:
        for f in sorted(dump.iterdir()):
            zf.write(f, f"rollouts/{f.name}")
    [rep] = run_import("verl", str(a), project="archives", mode="offline", spool_root=str(tmp_path / "spool"))
    assert rep.run_id is None and rep.spooled == 3
    assert rep.rejected == [("1.jsonl:3", "not valid JSON (Expecting value at column 1)")]
    assert rep.source == os.path.abspath(a) + "!"  # the archive names the run, not the temporary folder
    d = Path(rep.spool)
    state = json.loads((d / "run.json").read_text())
    assert state["create"]["name"] == "rollouts" and state["create"]["config"]["turnlensImport"]["source"] == rep.source
    records = [json.loads(line) for line in (d / "records.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records][-1] == "finish" and sum(r.get("rows", 0) for r in records) == 3
    assert [json.loads(line) for line in (d / "rejected.jsonl").read_text().splitlines()] == [{"where": "1.jsonl:3", "reason": "not valid JSON (Expecting value at column 1)"}]

    [out] = sync_spool(str(d), url=server.url)
    assert out["pending"] == 0 and out["rejected"] == []
    run = server.get(f"/api/v1/runs/{out['runId']}")
    assert run["status"] == "succeeded" and server.steps(out["runId"])["total"] == 2
    [again] = sync_spool(str(d), url=server.url)  # already synced: nothing sent twice
    assert again["runId"] == out["runId"] and again["sent"] == 0
    assert server.steps(out["runId"])["total"] == 2
