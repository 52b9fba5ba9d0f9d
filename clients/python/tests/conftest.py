"""A real TurnLens server per test session: the production build (`next build`) on a fresh,
migrated SQLite file, on a free loopback port (as scripts/e2e-server.sh does, without the worker:
imported runs need none). Tests that kill and restart it use `server.restart()`.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# The checkout whose build is served (default: this one); another lets a build of a newer server be tested.
SERVE = Path(os.environ.get("TURNLENS_SERVER_DIR") or REPO)
CLIENT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CLIENT))  # the package under test, installed or not


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.db = workdir / "turnlens.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.env = {**os.environ, "DATABASE_URL": f"file:{self.db}", "NEXT_TELEMETRY_DISABLED": "1", "PORT": str(self.port)}
        self.env.pop("TURNLENS_API_TOKEN", None)
        if not (SERVE / ".next" / "BUILD_ID").exists():
            pytest.skip("no production build: run `node_modules/.bin/next build` first (scripts/test.sh does)")
        subprocess.run([shutil.which("node") or "node", "scripts/db-migrate.mjs", "deploy"], cwd=SERVE, env=self.env,
                       check=True, capture_output=True)

    def start(self, timeout: float = 60.0) -> None:
        self.log = open(self.workdir / "server.log", "a")
        self.proc = subprocess.Popen([shutil.which("node") or "node", "scripts/web-server.mjs"],
                                     cwd=SERVE, env={**self.env, "TURNLENS_HOST": "127.0.0.1", "PORT": str(self.port)}, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {(self.workdir / 'server.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/api/v1/projects", timeout=2).read()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("server did not answer within 60 s")

    def kill(self) -> None:
        """SIGKILL, no goodbye: what a crashed or OOM-killed server looks like to the client."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def get(self, path: str):
        with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as r:
            body = r.read().decode()
        return json.loads(body) if body[:1] in "[{" else body

    def metrics(self, run_id: str):
        """Every stored point: {key: {step: value}} (the full-resolution CSV export)."""
        text = self.get(f"/api/v1/runs/{run_id}/metrics/export?format=csv")
        out = {}
        for line in text.splitlines()[1:]:
            key, step, value, _ = line.rsplit(",", 3)
            out.setdefault(json.loads(key), {})[int(step)] = float(value)
        return out

    def steps(self, run_id: str):
        return self.get(f"/api/v1/runs/{run_id}/steps?pageSize=1000")

    def trajectories(self, run_id: str, step: int):
        out, page = [], 1
        while True:
            r = self.get(f"/api/v1/runs/{run_id}/trajectories?step={step}&pageSize=200&page={page}")
            out += r["trajectories"]
            if len(out) >= r["total"] or not r["trajectories"]:
                return out
            page += 1


@pytest.fixture(scope="session")
def server():
    work = Path(tempfile.mkdtemp(prefix="turnlens-client-"))
    s = Server(work)
    # A SIGTERM (e.g. from `timeout`) unwinds through this fixture, so the server does not outlive the tests.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        s.start()
        yield s
    finally:
        s.kill()
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(autouse=True)
def turnlens_home(tmp_path, monkeypatch):
    """Spools and write keys of each test in its own folder."""
    monkeypatch.setenv("TURNLENS_DIR", str(tmp_path / "home"))
    monkeypatch.delenv("TURNLENS_MODE", raising=False)
    monkeypatch.delenv("TURNLENS_URL", raising=False)
    return tmp_path / "home"
