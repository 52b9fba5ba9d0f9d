"""The plain-loop example (examples/plain_loop.py, linked from docs/logging.md and the client README) runs as written against a server."""

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plain_loop.py"


def test_plain_loop_example(server, tmp_path):
    env = {**os.environ, "TURNLENS_URL": server.url, "PYTHONPATH": str(EXAMPLE.parents[1])}
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    m = re.match(r"run (\S+): 200 points and 160 turns sent", out.stdout)
    assert m, out.stdout
    assert server.steps(m.group(1))["total"] == 10
