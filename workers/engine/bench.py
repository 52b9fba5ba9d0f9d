"""Time one RL step of the tiny policy on a fixed calibration batch.

    python -m workers.engine.bench [--threads 1] [--repeats 10]

Batch: random 4x4 FrozenLake-like grids as prompts
(21 char tokens), 16 tasks x G = 16 rollouts = 256 samples, one action token restricted to the
four moves; model 2 layers, 4 heads, d_model 64; PPO-clip, 2 epochs, minibatch 512.
Runs the engine in process (the protocol's JSON costs a few ms more per call).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from .engine import Engine
from .protocol import Params

# one token per move, as in the prototype (13-token vocabulary: 4 specials + S F H G \n + 4 moves)
ACTIONS = ["L", "R", "U", "D"]


def grid(rng: random.Random) -> str:
    cells = ["S"] + [rng.choice("FFFFH") for _ in range(14)] + ["G"]
    return "\n".join("".join(cells[r * 4 : (r + 1) * 4]) for r in range(4)) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--repeats", type=int, default=10, help="timed steps (after 2 warm-up steps)")
    ap.add_argument("--tasks", type=int, default=16, help="prompts per step")
    ap.add_argument("--group", type=int, default=16, help="rollouts per prompt (G)")
    args = ap.parse_args()

    rng = random.Random(0)
    e = Engine()

    def call(cmd: str, **params):
        return e.dispatch(cmd, Params(params))

    info = call(
        "init",
        model="tiny",
        tiny={"context_length": 32},  # the protocol's default shape, short prompts
        tokenizer={"kind": "char", "corpus": [grid(rng) for _ in range(20)] + ["".join(ACTIONS)]},
        optimizer={"lr": 3e-4, "betas": [0.9, 0.99], "weight_decay": 0.0},
        threads=args.threads,
    )
    gen_t, upd_t = [], []
    for step in range(args.repeats + 2):
        prompts = [grid(rng) for _ in range(args.tasks)]
        t0 = time.perf_counter()
        g = call("generate", prompts=prompts, n=args.group, allowed=ACTIONS)
        t1 = time.perf_counter()
        samples = [
            {
                "prompt_ids": r["prompt_ids"],
                "response_ids": r["response_ids"],
                "old_logprobs": r["logprobs"],
                "advantages": rng.gauss(0.0, 1.0),
            }
            for r in g["responses"]
        ]
        call(
            "update", samples=samples, epochs=2, minibatch_size=512, clip_ratio=0.2, max_grad_norm=1.0, allowed=ACTIONS
        )
        t2 = time.perf_counter()
        if step >= 2:
            gen_t.append(t1 - t0)
            upd_t.append(t2 - t1)
    n = args.tasks * args.group
    print(
        f"params {info['num_params']}, vocab {info['vocab_size']}, prompt {len(samples[0]['prompt_ids'])} tokens, "
        f"{n} rollouts, threads {args.threads}"
    )
    print(f"generate: median {statistics.median(gen_t) * 1000:.0f} ms (min {min(gen_t) * 1000:.0f})")
    print(f"update (2 epochs): median {statistics.median(upd_t) * 1000:.0f} ms (min {min(upd_t) * 1000:.0f})")


if __name__ == "__main__":
    main()
