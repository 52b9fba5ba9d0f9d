"""A plain training loop logging to TurnLens: metrics every step, one step's rollouts every 10.
Run a server (npm start), then: python clients/python/examples/plain_loop.py [--offline]"""
import math
import random
import sys

import turnlens

run = turnlens.init(project="examples", name="plain-loop", config={"lr": 1e-4, "group_size": 4},
                    env_id="toy-maze", estimator="grpo", mode="offline" if "--offline" in sys.argv else None)
with run:
    for step in range(100):
        run.log({"train/loss": math.exp(-step / 30) + random.random() * 0.05, "train/lr": 1e-4}, step=step)
        if step % 10 == 0:
            groups = {}
            for task in range(2):  # 2 tasks x 4 attempts; GRPO: advantage = reward - group mean
                rewards = [float(random.random() < step / 100) for _ in range(4)]
                mean = sum(rewards) / 4
                groups[f"maze-{task}"] = [
                    [{"observation": "at start", "action": "right", "reward": 0.0, "anchor": "start", "advantage": r - mean},
                     {"observation": "at fork", "action": "up" if r else "down", "reward": r, "anchor": "fork", "advantage": r - mean}]
                    for r in rewards
                ]
            run.log_rollouts(step, groups)
print(f"run {run.id or '(offline)'}: {run.sent['points']} points and {run.sent['turns']} turns sent; spool {run.spool_dir}")
