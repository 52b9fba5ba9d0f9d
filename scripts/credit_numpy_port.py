#!/usr/bin/env python3
"""GiGPO in numpy, float64, the way a Python user would write it: the baseline that
`npm run bench:credit` times the credit CLI against end to end.

    python3 scripts/credit_numpy_port.py < request.json > response.json

Reads the same request JSON as the CLI (estimator "gigpo", exact anchors; `rowCopies` and reward
transforms are not covered) with `json.load`, groups rows with dictionaries (uid -> rows,
(uid, anchor) -> rows), does the arithmetic of each group on numpy arrays (mean, unbiased std,
normalisation), and writes {"trajectories": [{"id", "advantages"}]} with `json.dumps`. Semantics
are lib/credit/README.md "gigpo" with its degenerate-statistics convention: a statistic with one
member has mean 0, std 1 (episode) or gives A_S = 0 (step); zero variance gives 0. Anchors are
keyed by JSON type and value, so the number 1 and the string "1" are different states.
scripts/credit-reference.py is the slower per-row port kept for the golden fixtures.
"""
import json
import sys

import numpy as np

DEFAULTS = {"gamma": 0.95, "omega": 1.0, "mode": "mean_std_norm", "invalidPenalty": 0.1, "perTrajectory": False,
            "epsilon": 1e-6}


def anchor_key(a):
    """Dictionary key of an anchor: its JSON type and value (object keys sorted, 1.0 == 1)."""
    if isinstance(a, str):
        return a
    if a is None:
        return ("null",)
    return ("json", json.dumps(_integral(a), sort_keys=True, separators=(",", ":")))


def _integral(v):
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [_integral(x) for x in v]
    if isinstance(v, dict):
        return {k: _integral(x) for k, x in v.items()}
    return v


def gigpo(request):
    p = dict(DEFAULTS)
    p.update(request.get("params") or {})
    if request.get("estimator") != "gigpo" or p.get("anchorMatch", "exact") != "exact" or p.get("rowCopies"):
        sys.exit("error: this port covers estimator gigpo with exact anchors and no rowCopies")
    gamma, coef, eps = float(p["gamma"]), float(p["invalidPenalty"]), float(p["epsilon"])
    use_std = p["mode"] == "mean_std_norm"

    traj_ids, traj_start = [], [0]
    group_traj = []  # (first trajectory, end) of each uid
    rewards, invalid = [], []
    anchor_rows = {}  # (uid, anchor key) -> row indices
    for g in request["groups"]:
        uid = g["uid"]
        t0 = len(traj_ids)
        for t in g["trajectories"]:
            turns = t["turns"]
            row = len(rewards)
            for turn in turns:
                anchor_rows.setdefault((uid, anchor_key(turn.get("anchor"))), []).append(row)
                row += 1
            rewards.extend([turn["reward"] for turn in turns])
            invalid.extend([turn.get("invalid", False) for turn in turns])
            traj_ids.append(t["id"])
            traj_start.append(row)
        group_traj.append((t0, len(traj_ids)))
    # step returns G_t = r_t + gamma G_{t+1} per trajectory (Eq. 5), on the Python floats
    returns = []
    for a, b in zip(traj_start[:-1], traj_start[1:]):
        running = 0.0
        g = []
        for r in reversed(rewards[a:b]):
            running = r + gamma * running
            g.append(running)
        returns.extend(reversed(g))
    rewards = np.array(rewards, dtype=np.float64)
    returns = np.array(returns, dtype=np.float64)
    invalid = np.array(invalid, dtype=bool)
    n = len(rewards)
    starts = np.array(traj_start)
    lengths = np.diff(starts)

    # the invalid-action penalty, after discounting
    penalty = coef * invalid
    returns -= penalty
    # each row's copy of its trajectory's score R (minus the penalty on an invalid row)
    scores = np.repeat(np.add.reduceat(rewards, starts[:-1]), lengths) - penalty

    # episode advantage A_E per uid: statistics over all step rows (or each trajectory's first row)
    episode = np.zeros(n)
    for t0, t1 in group_traj:
        a, b = traj_start[t0], traj_start[t1]
        s = scores[a:b]
        stat = scores[starts[t0:t1]] if p["perTrajectory"] else s
        if len(stat) == 1:
            mean, std = 0.0, 1.0
        elif np.all(stat == stat[0]):
            mean, std = stat[0], 0.0
        else:
            mean, std = stat.mean(), stat.std(ddof=1)
        if not use_std:
            episode[a:b] = s - mean
        elif std > 0:
            episode[a:b] = (s - mean) / (std + eps)

    # step advantage A_S within each anchor group
    step = np.zeros(n)
    for rows in anchor_rows.values():
        if len(rows) == 1:
            continue  # one member: A_S = 0
        idx = np.array(rows)
        g = returns[idx]
        if np.all(g == g[0]):
            continue  # zero variance: 0
        d = g - g.mean()
        step[idx] = d / (g.std(ddof=1) + eps) if use_std else d

    adv = episode + p["omega"] * step
    return {"trajectories": [{"id": traj_ids[i], "advantages": adv[traj_start[i]:traj_start[i + 1]].tolist()}
                             for i in range(len(traj_ids))]}


def main():
    request = json.load(sys.stdin)
    # one json.dumps and one write: json.dump(obj, sys.stdout) streams many small writes and takes
    # about 3 s longer on 10^6 turns, which would flatter the CLI
    sys.stdout.write(json.dumps(gigpo(request), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
