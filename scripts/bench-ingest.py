#!/usr/bin/env python3
"""npm run bench:ingest — ingest throughput through the Python client (clients/python), with the
dashboard's read latency measured while it runs.

Starts the production build (`next build` first) on a fresh SQLite file and a free loopback port,
then for 1 writer and for 4 writers (separate processes, one run each): metric points/s (log()
calls of 10 keys, from the first call until finish() returns, i.e. stored) and turns/s
(log_rollouts of 16 groups x 8 trajectories x 8 turns), after a warm-up run that sends one
full-size request of each kind.
Meanwhile 2 reader processes poll what the dashboard reads (the runs table, a chart's series, a
page of trajectories) and report p50/p99.
Options: --points N (per writer, default 500000), --turns N (per writer, default 200000).
Env: TURNLENS_SERVER_DIR (the checkout whose build is served), TURNLENS_CLIENT_DIR (the client
package directory, default clients/python): another checkout's of either compares two versions.
"""

import argparse
import json
import multiprocessing as mp
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

ROOT = Path(__file__).resolve().parents[1]
# The checkout whose build is served (default this one), as in the client tests.
SERVE = Path(os.environ.get("TURNLENS_SERVER_DIR") or ROOT)
CLIENT = Path(os.environ.get("TURNLENS_CLIENT_DIR") or ROOT / "clients" / "python")
sys.path.insert(0, str(CLIENT))

import turnlens  # noqa: E402

KEYS = [f"train/k{i}" for i in range(10)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(work: Path):
    port = free_port()
    env = {**os.environ, "DATABASE_URL": f"file:{work / 'bench.db'}", "NEXT_TELEMETRY_DISABLED": "1"}
    env.pop("TURNLENS_API_TOKEN", None)
    subprocess.run(["node", "scripts/db-migrate.mjs", "deploy"], cwd=SERVE, env=env, check=True, capture_output=True)
    proc = subprocess.Popen([shutil.which("node") or "node", "scripts/web-server.mjs"],
                            cwd=SERVE, env={**env, "TURNLENS_HOST": "127.0.0.1", "PORT": str(port)},
                            stdout=open(work / "server.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/api/v1/projects", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("bench: the server did not start (see server.log)")


def warm_up(url: str) -> None:
    """One full-size request of each kind the phases make, before any is timed: Next loads a route's
    code on its first request, the ingest thread starts on the first write (about a second, once per
    server), and V8 compiles the ingest loops while they run on full-size batches."""
    with turnlens.init(project="bench-warm-up", name="warm-up", url=url) as run:
        for step in range(2_000):
            run.log({k: 0.0 for k in KEYS}, step=step)
        run.log_rollouts(0, turn_groups())
    for path in ("/api/v1/runs?pageSize=50", f"/api/v1/runs/{run.id}/metrics/series?key=train/k0",
                 f"/api/v1/runs/{run.id}/trajectories?pageSize=50"):
        urllib.request.urlopen(url + path, timeout=60).read()


def stop_server(proc, work: Path) -> None:
    """Stops what start_server started and removes its database."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait()
    shutil.rmtree(work, ignore_errors=True)


def write_points(url: str, n_points: int, tag: str, out: "mp.Queue") -> None:
    run = turnlens.init(project="bench-ingest", name=f"points-{tag}", url=url, finish_timeout=600)
    t0 = time.perf_counter()
    for step in range(n_points // len(KEYS)):
        run.log({k: step * 0.001 + i for i, k in enumerate(KEYS)}, step=step, wall_time=1.7e9 + step)
    run.finish()
    out.put(("points", run.sent["points"], time.perf_counter() - t0, run.id))


def turn_groups():
    """One step's rollouts: 16 groups x 8 trajectories x 8 turns."""
    return {f"task-{g}": [[{"observation": f"obs {g} {t} {k} " + "x" * 40, "action": "left", "reward": float(k == 7),
                            "anchor": f"s{k}", "advantage": 0.1 * k} for k in range(8)] for t in range(8)] for g in range(16)}


def write_turns(url: str, n_turns: int, tag: str, out: "mp.Queue") -> None:
    run = turnlens.init(project="bench-ingest", name=f"turns-{tag}", url=url, finish_timeout=600)
    per_step = 16 * 8 * 8
    groups = turn_groups()
    t0 = time.perf_counter()
    for step in range(max(1, n_turns // per_step)):
        run.log_rollouts(step, groups)
    run.finish()
    out.put(("turns", run.sent["turns"], time.perf_counter() - t0, run.id))


def reader(url: str, stop: "mp.Event", out: "mp.Queue") -> None:
    """What an open dashboard polls: the runs table, a chart's live series, a trajectory page."""
    lat = []
    run_id = None
    while not stop.is_set():
        try:
            t0 = time.perf_counter()
            runs = json.loads(urllib.request.urlopen(f"{url}/api/v1/runs?pageSize=50", timeout=30).read())
            lat.append(time.perf_counter() - t0)
            live = [r for r in runs["runs"] if r["status"] == "running"]
            run_id = live[0]["id"] if live else run_id
            if run_id:
                t0 = time.perf_counter()
                urllib.request.urlopen(f"{url}/api/v1/runs/{run_id}/metrics/series?key=train/k0", timeout=30).read()
                urllib.request.urlopen(f"{url}/api/v1/runs/{run_id}/trajectories?pageSize=50", timeout=30).read()
                lat.append((time.perf_counter() - t0) / 2)
        except OSError:
            pass
        time.sleep(0.05)
    out.put(lat)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000 if xs else float("nan")


def phase(url: str, kind: str, writers: int, n: int):
    out: "mp.Queue" = mp.Queue()
    lat_q: "mp.Queue" = mp.Queue()
    stop = mp.Event()
    readers = [mp.Process(target=reader, args=(url, stop, lat_q)) for _ in range(2)]
    for r in readers:
        r.start()
    target = write_points if kind == "points" else write_turns
    t0 = time.perf_counter()
    procs = [mp.Process(target=target, args=(url, n, f"{writers}w-{i}", out)) for i in range(writers)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    stop.set()
    lat = [x for _ in readers for x in lat_q.get()]
    for r in readers:
        r.join()
    total = sum(r[1] for r in results)
    return {"kind": kind, "writers": writers, "total": total, "seconds": wall, "rate": total / wall,
            "read_p50_ms": pct(lat, 50), "read_p99_ms": pct(lat, 99), "reads": len(lat)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=500_000)
    ap.add_argument("--turns", type=int, default=200_000)
    args = ap.parse_args()
    if not (SERVE / ".next" / "BUILD_ID").exists():
        raise SystemExit("bench: build the dashboard first: node_modules/.bin/next build")
    work = Path(tempfile.mkdtemp(prefix="turnlens-bench-ingest-"))
    os.environ["TURNLENS_DIR"] = str(work / "home")
    proc, url = start_server(work)
    try:
        warm_up(url)
        rows = []
        for writers in (1, 4):
            rows.append(phase(url, "points", writers, args.points))
            rows.append(phase(url, "turns", writers, args.turns))
        print(f"bench:ingest through the Python client ({CLIENT}) ({os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f} at the end), 2 dashboard readers polling")
        print("| workload | writers | total | seconds | rate /s | read p50 ms | read p99 ms |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['kind']} | {r['writers']} | {r['total']:,} | {r['seconds']:.2f} | {r['rate']:,.0f} | {r['read_p50_ms']:.1f} | {r['read_p99_ms']:.1f} |")
    finally:
        stop_server(proc, work)


if __name__ == "__main__":
    main()
