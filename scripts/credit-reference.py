#!/usr/bin/env python3
"""Float64 Python port of GiGPO as lib/credit computes it (verl-agent `core_gigpo.py` semantics,
README "gigpo"), the baseline that `npm run bench:credit` times the credit CLI against.

    python3 scripts/credit-reference.py < request.json > response.json

Reads the same request JSON as the CLI (estimator "gigpo" only; exact anchors) and writes
{"trajectories": [{"id", "advantages"}]}. Written the way the reference code is: per-row Python
loops over dictionaries keyed by uid / trajectory / anchor, numpy for the statistics, all in
float64 (the reference uses torch float32). Degenerate statistics follow lib/credit/README.md:
one member -> mean 0, std 1 (episode) or A_S = 0 (step); zero variance -> 0.
"""
import json
import sys
from collections import defaultdict

import numpy as np


def to_hashable(x):
    """Anchor -> dictionary key (verl-agent `to_hashable`): strings as they are, other JSON values
    sorted and tagged with their type, so the number 1 and the string "1" are different anchors."""
    if isinstance(x, str):
        return x
    return ("json", json.dumps(x, sort_keys=True, separators=(",", ":")))


def normalise(values, keys, eps, remove_std, singleton_zero):
    """(x - mean_key) / (std_key + eps) per row, torch.std (unbiased) per key, like core_gigpo."""
    id2score = defaultdict(list)
    for k, v in zip(keys, values):
        id2score[k].append(v)
    id2mean, id2std = {}, {}
    for k, vs in id2score.items():
        arr = np.asarray(vs, dtype=np.float64)
        if len(vs) == 1:
            id2mean[k], id2std[k] = (arr[0], 1.0) if singleton_zero else (0.0, 1.0)
        elif np.all(arr == arr[0]):
            id2mean[k], id2std[k] = arr[0], 0.0  # zero variance: every member gives 0
        else:
            id2mean[k], id2std[k] = arr.mean(), arr.std(ddof=1)
    return id2mean, id2std


def gigpo(request):
    p = {"gamma": 0.95, "omega": 1.0, "mode": "mean_std_norm", "invalidPenalty": 0.1, "perTrajectory": False, "epsilon": 1e-6}
    p.update(request.get("params") or {})
    if request.get("estimator") != "gigpo" or p.get("anchorMatch", "exact") != "exact":
        sys.exit("error: this port covers estimator gigpo with exact anchors only")
    gamma, coef, eps = p["gamma"], p["invalidPenalty"], p["epsilon"]
    remove_std = p["mode"] == "mean_norm"

    # one row per turn: uid, trajectory, anchor key, reward, invalid flag
    row_uid, row_traj, row_anchor, rewards, invalid = [], [], [], [], []
    traj_ids = []
    for g in request["groups"]:
        for t in g["trajectories"]:
            ti = len(traj_ids)
            traj_ids.append(t["id"])
            for turn in t["turns"]:
                row_uid.append(g["uid"])
                row_traj.append(ti)
                row_anchor.append((g["uid"], to_hashable(turn.get("anchor"))))
                rewards.append(float(turn["reward"]))
                invalid.append(bool(turn.get("invalid", False)))
    rewards = np.asarray(rewards, dtype=np.float64)
    invalid = np.asarray(invalid, dtype=bool)
    n = len(rewards)

    # compute_step_discounted_returns: per trajectory, backwards; penalty after discounting
    traj_rows = defaultdict(list)
    for i, ti in enumerate(row_traj):
        traj_rows[ti].append(i)
    returns = np.zeros(n)
    scores = np.zeros(n)  # each row's copy of the episode score R
    for ti, rows in traj_rows.items():
        running = 0.0
        for i in reversed(rows):
            running = rewards[i] + gamma * running
            returns[i] = running
        scores[rows] = rewards[rows].sum()
    penalty = coef * invalid
    returns -= penalty
    scores -= penalty

    # episode_norm_reward: statistics over every step row (or each trajectory's first row)
    if p["perTrajectory"]:
        first = [rows[0] for rows in traj_rows.values()]
        ep_mean, ep_std = normalise(scores[first], [row_uid[i] for i in first], eps, remove_std, False)
    else:
        ep_mean, ep_std = normalise(scores, row_uid, eps, remove_std, False)
    episode = np.zeros(n)
    for i in range(n):
        k = row_uid[i]
        if remove_std:
            episode[i] = scores[i] - ep_mean[k]
        elif ep_std[k] == 0.0:
            episode[i] = 0.0
        else:
            episode[i] = (scores[i] - ep_mean[k]) / (ep_std[k] + eps)

    # build_step_group + step_norm_reward: anchors grouped within a uid
    st_mean, st_std = normalise(returns, row_anchor, eps, remove_std, True)
    step = np.zeros(n)
    for i in range(n):
        k = row_anchor[i]
        step[i] = returns[i] - st_mean[k] if remove_std else (returns[i] - st_mean[k]) / (st_std[k] + eps)

    adv = episode + p["omega"] * step
    out = []
    for ti, rows in traj_rows.items():
        out.append({"id": traj_ids[ti], "advantages": adv[rows].tolist()})
    return {"trajectories": out}


def main():
    request = json.load(sys.stdin)
    json.dump(gigpo(request), sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
