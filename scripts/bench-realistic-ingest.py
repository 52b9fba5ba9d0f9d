#!/usr/bin/env python3
"""The ingest side of npm run bench:realistic (scripts/bench-realistic.ts runs it): logs the
steps of a JSON-lines file (one POST /runs/{id}/steps body a line, as scripts/realistic-workload.ts
writes them) through the TurnLens Python client as a trainer would, and the same turns to Trackio
as a table a step. Prints one JSON line a step:
  blocked    seconds log_rollouts held the caller (the training loop); step 0 is checked in the
             loop, later steps are converted in the client's sender thread
  stored     seconds from the call until run.flush() returns: the server has answered the step,
             which it does once the step is committed and readable (checked after: GET /runs/{id}/steps
             lists it)
  trackio_blocked, trackio_stored
             Trackio's log() call, and log() + finish() (its writes are on disk then)
usage: bench-realistic-ingest.py STEPS.jsonl URL TRACKIO_DIR [CLIENT_DIR]
"""

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

steps_file, url, trackio_dir = sys.argv[1:4]
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, sys.argv[4] if len(sys.argv) > 4 else str(ROOT / "clients" / "python"))
os.environ["TRACKIO_DIR"] = trackio_dir  # read by trackio when first imported

import pandas as pd  # noqa: E402
import trackio  # noqa: E402
import turnlens  # noqa: E402


def steps_stored(run_id: str) -> int:
    with urllib.request.urlopen(f"{url}/api/v1/runs/{run_id}/steps?pageSize=1", timeout=60) as r:
        return json.load(r)["total"]


def frame(body) -> "pd.DataFrame":
    """The step's turns as one table, a row a turn (what a Trackio user logs)."""
    return pd.DataFrame([{"uid": g["uid"], "trajectory": t, "turn": k, **turn}
                         for g in body["groups"] for t, tr in enumerate(g["trajectories"]) for k, turn in enumerate(tr["turns"])])


with turnlens.init(project="bench", name="alfworld-realistic", url=url, env_id="alfworld", finish_timeout=3600) as run:
    print(json.dumps({"runId": run.id}), flush=True)
    with open(steps_file) as f:
        for i, line in enumerate(f):
            body = json.loads(line)
            groups = {g["uid"]: g["trajectories"] for g in body["groups"]}
            t0 = time.perf_counter()
            run.log_rollouts(body["step"], groups, estimator=body.get("estimator"), params=body.get("params"))
            blocked = time.perf_counter() - t0
            if not run.flush(timeout=600):
                raise SystemExit(f"step {body['step']} was not stored within 600 s")
            stored = time.perf_counter() - t0
            if steps_stored(run.id) != i + 1 or run.rejected:
                raise SystemExit(f"step {body['step']}: the server lists {steps_stored(run.id)} steps ({run.rejected})")

            df = frame(body)
            trackio.init(project="bench", name=f"alfworld-step-{body['step']}", embed=False)
            t0 = time.perf_counter()
            trackio.log({"rollouts": trackio.Table(dataframe=df)}, step=body["step"])
            trackio_blocked = time.perf_counter() - t0
            trackio.finish()
            trackio_stored = time.perf_counter() - t0
            print(json.dumps({"step": body["step"], "blocked": blocked, "stored": stored,
                              "trackio_blocked": trackio_blocked, "trackio_stored": trackio_stored}), flush=True)
