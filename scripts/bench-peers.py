#!/usr/bin/env python3
"""npm run bench:peers — TurnLens (through its Python client and HTTP) beside Trackio and MLflow
(each through its own Python API on local storage), the same workloads, interleaved, in one run.

First run: creates node_modules/.turnlens-peers-venv (--system-site-packages) and installs
trackio 0.43 and mlflow 3.17 from PyPI into it (about 85 s here), then re-runs itself there.
Workloads (each system in turn, round after round, after one untimed round; the median of the
rounds is printed, and each round's write and turns times):
  write      N metric points (log calls of 10 keys) until stored (finish/end_run returned)
  chart      one key's series as a chart asks for it (TurnLens: downsampled to 1,500 points)
  all-points every point of a one-key series of --series-points points, written once untimed
             (TurnLens: turnlens.Api().run(id).history(keys), a DataFrame: the packed export decoded
             with numpy; Trackio: SQLiteStorage.get_metric_values; MLflow: get_metric_history)
  run-query  R runs with a numeric config value, filter on it and sort by it
  turns      T agent turns as one step's rollouts (TurnLens) / a table (Trackio, MLflow)
  tokens     one ALFWorld-sized GiGPO step (16 tasks x 8 trajectories x 50 turns = 6,400 turns,
             ~1 KB observations, --tokens response tokens a turn with ids, texts, log-probs,
             advantages and entropies) until stored (TurnLens) / as a table (Trackio, MLflow)
Options: --points (100000), --series-points (1000000), --runs (100), --turns (20000), --tokens
(256; 0 skips that workload), --rounds (3). Ratios are the peer's time divided by TurnLens's (> 1: TurnLens faster).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "node_modules" / ".turnlens-peers-venv"
SERVE = Path(os.environ.get("TURNLENS_SERVER_DIR") or ROOT)
KEYS = [f"train/k{i}" for i in range(10)]


def ensure_venv() -> None:
    import importlib.util

    # find_spec, not import: trackio reads TRACKIO_DIR when first imported (set later, per run)
    if importlib.util.find_spec("trackio") and importlib.util.find_spec("mlflow"):
        return
    py = VENV / "bin" / "python"
    if os.environ.get("TURNLENS_PEERS_VENV") == "1":
        raise SystemExit("bench:peers: trackio/mlflow still not importable in the venv")
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True)
    has = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('trackio') and u.find_spec('mlflow') else 1)"
    if subprocess.run([str(py), "-c", has]).returncode != 0:  # a venv made by an earlier run is used as it is
        t0 = time.time()
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "trackio==0.43.*", "mlflow==3.17.*"], check=True)
        print(f"bench:peers: installed trackio and mlflow in {time.time() - t0:.0f} s", flush=True)
    os.execve(str(py), [str(py), __file__, *sys.argv[1:]], {**os.environ, "TURNLENS_PEERS_VENV": "1"})


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ------------------------------------------------------------------ the three systems


class TurnLens:
    name = "TurnLens"

    def __init__(self, url: str):
        import turnlens

        self.tl, self.url, self.n = turnlens, url, 0
        self.api = turnlens.Api(url=url, timeout=600)

    def _get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=120) as r:
            return r.read()

    def write(self, points):
        run = self.tl.init(project="peers", name=f"write-{self.n}", url=self.url, finish_timeout=600)
        self.n += 1
        for step in range(points // len(KEYS)):
            run.log({k: step * 0.001 + i for i, k in enumerate(KEYS)}, step=step)
        run.finish()
        self.last = run.id

    def chart(self):
        self._get(f"/api/v1/runs/{self.last}/metrics/series?key=train/k0&maxPoints=1500")

    def write_series(self, points):
        with self.tl.init(project="peers", name="series", url=self.url, finish_timeout=600) as run:
            for step in range(points):
                run.log({"train/all": step * 0.001}, step=step)
        self.series = run.id

    def all_points(self):
        df = self.api.run(self.series).history(keys=["train/all"])
        assert len(df) == self.series_points

    def make_runs(self, n):
        for i in range(n):
            with self.tl.init(project="peers-query", name=f"q{i}", config={"lr": i * 1e-5}, url=self.url) as run:
                run.log({"final/reward": (i * 7919) % 1000 / 1000}, step=0)

    def query(self):
        q = urllib.parse.urlencode({"project": "peers-query", "config": "lr<=0.001", "sort": "metric:final/reward", "order": "desc", "pageSize": 500})
        self._get(f"/api/v1/runs?{q}")

    def turns(self, n):
        with self.tl.init(project="peers", name=f"turns-{self.n}", url=self.url) as run:
            run.log_rollouts(0, turn_groups(n))
        self.n += 1

    def tokens(self, groups):
        # the run's first log_rollouts call is checked in the loop: a small one first, as a trainer's step 0
        with self.tl.init(project="peers", name=f"tokens-{self.n}", url=self.url, finish_timeout=600) as run:
            run.log_rollouts(0, {"warm": [[{"observation": "o", "action": "a", "reward": 0.0}]]})
            t0 = time.perf_counter()
            run.log_rollouts(1, groups)
            self.blocked = time.perf_counter() - t0
        self.n += 1


class Trackio:
    name = "Trackio"

    def __init__(self, d: Path):
        os.environ["TRACKIO_DIR"] = str(d)
        import trackio
        from trackio.sqlite_storage import SQLiteStorage

        self.t, self.s, self.n = trackio, SQLiteStorage, 0

    def write(self, points):
        self.last = f"write-{self.n}"
        self.n += 1
        self.t.init(project="peers", name=self.last, embed=False)
        for step in range(points // len(KEYS)):
            self.t.log({k: step * 0.001 + i for i, k in enumerate(KEYS)}, step=step)
        self.t.finish()

    def chart(self):
        self.s.get_metric_values("peers", self.last, "train/k0", max_points=1500)

    def write_series(self, points):
        # the storage's own bulk write (what trackio.log's queue ends in), 10,000 rows a call
        self.t.init(project="peers", name="series", embed=False)
        self.t.finish()
        for lo in range(0, points, 10_000):
            steps = list(range(lo, min(points, lo + 10_000)))
            self.s.bulk_log("peers", "series", [{"train/all": s * 0.001} for s in steps], steps=steps)

    def all_points(self):
        assert len(self.s.get_metric_values("peers", "series", "train/all")) == self.series_points

    def make_runs(self, n):
        for i in range(n):
            self.t.init(project="peers-query", name=f"q{i}", config={"lr": i * 1e-5}, embed=False)
            self.t.log({"final/reward": (i * 7919) % 1000 / 1000}, step=0)
            self.t.finish()

    def query(self):
        # Trackio has no server-side run query: read every run's config and last value, filter, sort
        configs = self.s.get_all_run_configs("peers-query")
        rows = []
        for run, cfg in configs.items():
            if cfg.get("lr", 1) <= 0.001:
                vals = self.s.get_metric_values("peers-query", run, "final/reward")
                rows.append((vals[-1]["value"] if vals else None, run))
        rows.sort(key=lambda r: (r[0] is None, -(r[0] or 0)))

    def turns(self, n):
        self.t.init(project="peers", name=f"turns-{self.n}", embed=False)
        self.n += 1
        self.t.log({"rollouts": self.t.Table(dataframe=turn_frame(n))}, step=0)
        self.t.finish()

    def tokens(self, groups):
        self.t.init(project="peers", name=f"tokens-{self.n}", embed=False)
        self.n += 1
        self.t.log({"rollouts": self.t.Table(dataframe=groups_frame(groups))}, step=0)
        self.t.finish()


class MLflow:
    name = "MLflow"

    def __init__(self, d: Path):
        import mlflow

        mlflow.set_tracking_uri(f"sqlite:///{d / 'mlflow.db'}")
        self.m, self.c, self.n = mlflow, mlflow.tracking.MlflowClient(), 0
        # artifacts (the turns table) in the bench's temp dir, not ./mlruns of the checkout
        art = (d / "mlflow-artifacts").as_uri()
        self.exp = self.c.create_experiment("peers", artifact_location=art)
        self.qexp = self.c.create_experiment("peers-query", artifact_location=art)

    def write(self, points):
        from mlflow.entities import Metric

        with self.m.start_run(experiment_id=self.exp) as run:
            self.last = run.info.run_id
            ts = int(time.time() * 1000)
            batch = []
            for step in range(points // len(KEYS)):
                batch += [Metric(k, step * 0.001 + i, ts, step) for i, k in enumerate(KEYS)]
                if len(batch) >= 1000:  # MLflow's log_batch limit is 1,000 metrics
                    self.c.log_batch(self.last, metrics=batch)
                    batch = []
            if batch:
                self.c.log_batch(self.last, metrics=batch)

    def chart(self):
        self.c.get_metric_history(self.last, "train/k0")  # no server-side downsampling

    def write_series(self, points):
        from mlflow.entities import Metric

        with self.m.start_run(experiment_id=self.exp) as run:
            self.series = run.info.run_id
            ts = int(time.time() * 1000)
            for lo in range(0, points, 1000):  # log_batch's limit: 1,000 metrics
                self.c.log_batch(self.series, metrics=[Metric("train/all", s * 0.001, ts, s) for s in range(lo, min(points, lo + 1000))])

    def all_points(self):
        assert len(self.c.get_metric_history(self.series, "train/all")) == self.series_points

    def make_runs(self, n):
        for i in range(n):
            with self.m.start_run(experiment_id=self.qexp):
                self.m.log_param("lr", i * 1e-5)
                self.m.log_metric("final/reward", (i * 7919) % 1000 / 1000, step=0)

    def query(self):
        # MLflow params are strings (a filter on them compares text): sort on the server, filter here
        runs = self.c.search_runs([self.qexp], max_results=500, order_by=["metrics.`final/reward` DESC"])
        [r for r in runs if float(r.data.params.get("lr", 1)) <= 0.001]

    def turns(self, n):
        with self.m.start_run(experiment_id=self.exp):
            self.m.log_table(turn_frame(n), artifact_file="rollouts.json")

    def tokens(self, groups):
        with self.m.start_run(experiment_id=self.exp):
            self.m.log_table(groups_frame(groups), artifact_file="rollouts.json")


def turn_groups(n):
    per = 8 * 8
    return {f"task-{g}": [[{"observation": f"obs {g} {t} {k} " + "x" * 40, "action": "left", "reward": float(k == 7),
                            "anchor": f"s{k}", "advantage": 0.1 * k} for k in range(8)] for t in range(8)] for g in range(max(1, n // per))}


def alfworld_step(tokens, seed=0):
    """The tokens workload: 16 tasks x 8 trajectories x 50 turns, seeded."""
    import random

    rng = random.Random(seed)
    room = "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 1, a drawer 1. "
    return {f"task-{g}": [[{
        "observation": f"task {g} trajectory {t} turn {k}: " + room * 8, "action": f"go to cabinet {k % 7}",
        "reward": 10.0 if (k == 49 and t % 2 == 0) else 0.0, "anchor": f"room-{g}-{k % 9}", "advantage": rng.uniform(-2, 2),
        "token_ids": [rng.randrange(150_000) for _ in range(tokens)], "token_texts": [f"t{rng.randrange(100)}" for _ in range(tokens)],
        "token_logprobs": [-rng.random() for _ in range(tokens)], "token_advantages": [0.5] * tokens,
        "token_entropies": [rng.random() for _ in range(tokens)]} for k in range(50)] for t in range(8)] for g in range(16)}


def groups_frame(groups):
    import pandas as pd

    return pd.DataFrame([{"uid": uid, "trajectory": t, "turn": k, **turn} for uid, trajs in groups.items() for t, tr in enumerate(trajs) for k, turn in enumerate(tr)])


def turn_frame(n):
    import pandas as pd

    rows = [{"uid": uid, "trajectory": t, "turn": k, **turn} for uid, trajs in turn_groups(n).items() for t, tr in enumerate(trajs) for k, turn in enumerate(tr)]
    return pd.DataFrame(rows)


def main() -> None:
    if sys.argv[1:] == ["--venv-only"]:  # bench:realistic's Trackio: the venv made, nothing run
        ensure_venv()
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--series-points", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--systems", default="TurnLens,Trackio,MLflow", help="which systems run (MLflow takes minutes to write the series)")
    args = ap.parse_args()
    ensure_venv()
    # TURNLENS_CLIENT_DIR: another client package directory (to compare two versions; bench-ingest.py reads it too)
    sys.path.insert(0, os.environ.get("TURNLENS_CLIENT_DIR") or str(ROOT / "clients" / "python"))
    sys.path.insert(0, str(ROOT / "scripts"))
    from importlib import import_module

    ingest = import_module("bench-ingest")  # its server start-up (fresh SQLite file, free port)
    work = Path(tempfile.mkdtemp(prefix="turnlens-bench-peers-"))
    os.environ["TURNLENS_DIR"] = str(work / "home")
    proc, url = ingest.start_server(work)
    chosen = args.systems.split(",")
    makers = {"TurnLens": lambda: TurnLens(url), "Trackio": lambda: Trackio(work / "trackio"), "MLflow": lambda: MLflow(work)}
    if chosen[0] != "TurnLens" or any(c not in makers for c in chosen):
        raise SystemExit(f"--systems: TurnLens first, then any of Trackio, MLflow (got {args.systems!r})")
    systems = [makers[c]() for c in chosen]
    try:
        workloads = ("write", "chart", "all-points", "run-query", "turns") + (("tokens",) if args.tokens else ())
        step_groups = alfworld_step(args.tokens) if args.tokens else None
        times = {(s.name, w): [] for s in systems for w in workloads}
        blocked = []
        for s in systems:
            s.series_points = args.series_points
            t0 = time.perf_counter()
            s.write_series(args.series_points)
            print(f"{s.name}: the {args.series_points:,}-point series written in {time.perf_counter() - t0:.1f} s (untimed)", flush=True)
            s.make_runs(args.runs)
            # one untimed write and turns of full size first, as bench-ingest does: the server's route
            # code loads and V8 compiles the ingest loops on first use (round 1 took ~2x as long
            # as later rounds without it), and each peer's Python imports and caches warm the same way
            s.write(args.points)
            s.all_points()
            s.turns(args.turns)
            if step_groups:
                s.tokens(step_groups)
        for r in range(args.rounds):
            for s in systems:  # interleaved: every system once per round
                times[(s.name, "write")].append(timed(lambda: s.write(args.points)))
                times[(s.name, "chart")].append(min(timed(s.chart) for _ in range(5)))
                times[(s.name, "all-points")].append(timed(s.all_points))
                times[(s.name, "run-query")].append(min(timed(s.query) for _ in range(5)))
                times[(s.name, "turns")].append(timed(lambda: s.turns(args.turns)))
                if step_groups:
                    times[(s.name, "tokens")].append(timed(lambda: s.tokens(step_groups)))
                    if s.name == "TurnLens":
                        blocked.append(s.blocked)
            # each round's write and turns times, so a median's spread is visible
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{s.name} write {times[(s.name, 'write')][-1]:.3f} turns {times[(s.name, 'turns')][-1]:.3f}"
                + (f" tokens {times[(s.name, 'tokens')][-1]:.3f}" if step_groups else "") for s in systems), flush=True)
        print(f"\nbench:peers ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}); median of {args.rounds} rounds, seconds; "
              f"{args.points:,} points, a {args.series_points:,}-point series, {args.runs} runs, {args.turns:,} turns")
        peers = [s.name for s in systems[1:]]
        print("| workload | " + " | ".join(s.name for s in systems) + "".join(f" | {p} / TurnLens" for p in peers) + " |")
        print("| --- " * (len(systems) + len(peers)) + "| --- |")
        for w in workloads:
            m = {s.name: statistics.median(times[(s.name, w)]) for s in systems}
            print(f"| {w} | " + " | ".join(f"{m[s.name]:.4f}" for s in systems)
                  + "".join(f" | {m[p] / m['TurnLens']:.2f}x" for p in peers) + " |")
        if blocked:
            print(f"\ntokens: TurnLens's log_rollouts returned in {statistics.median(blocked) * 1e3:.3f} ms (median; the loop's wait), "
                  f"the step then stored in the background")
    finally:
        ingest.stop_server(proc, work)


if __name__ == "__main__":
    main()
