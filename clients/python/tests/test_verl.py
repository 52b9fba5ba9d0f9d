"""The verl-agent integration on batches with verl-agent's field names and dtypes: the advantages
it stores are the trainer's, and they equal lib/credit's GiGPO on the same groups."""

import json
import random
import subprocess
from collections import defaultdict

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

from conftest import REPO  # noqa: E402
from turnlens.integrations.verl import batch_to_groups, log_verl_step  # noqa: E402

GAMMA, EPS = 0.95, 1e-6


class DataProto:
    """The two attributes of verl's DataProto the integration reads."""

    def __init__(self, batch, non_tensor_batch):
        self.batch, self.non_tensor_batch = batch, non_tensor_batch


def verl_agent_gigpo(nt, token_level_rewards, response_mask):
    """A line-by-line port of verl-agent gigpo/core_gigpo.py (mode mean_std_norm, exact anchors,
    episode statistics across steps): compute_step_discounted_returns, episode_norm_reward,
    build_step_group, step_norm_reward. Returns token-level advantages (bs, L)."""
    rewards = nt["rewards"].astype(np.float32)
    traj_uids, index, anchors = nt["traj_uid"], nt["uid"], nt["anchor_obs"]
    returns = np.zeros_like(rewards)
    for uid in np.unique(traj_uids):
        idx = np.where(traj_uids == uid)[0]
        running = 0.0
        for t in reversed(range(len(idx))):
            running = rewards[idx[t]] + GAMMA * running
            returns[idx[t]] = running
    step_rewards = torch.tensor(returns, dtype=torch.float32)

    def norm(scores, keys, singleton_mean):
        # a group of one: episode_norm_reward uses mean 0, step_norm_reward the score itself (std 1 in both)
        by = defaultdict(list)
        for i in range(len(scores)):
            by[keys[i]].append(scores[i])
        mean = {k: (torch.mean(torch.tensor(v)) if len(v) > 1 else singleton_mean(v[0])) for k, v in by.items()}
        std = {k: (torch.std(torch.tensor([v])) if len(v) > 1 else torch.tensor(1.0)) for k, v in by.items()}
        out = scores.clone()
        for i in range(len(scores)):
            out[i] = (scores[i] - mean[keys[i]]) / (std[keys[i]] + EPS)
        return out

    episode = norm(token_level_rewards.sum(dim=-1), list(index), lambda x: torch.tensor(0.0))
    step_group = [f"{index[i]}|{anchors[i]}" for i in range(len(index))]
    step = norm(step_rewards, step_group, lambda x: x)
    length = response_mask.shape[-1]
    return (episode + step).unsqueeze(-1).tile([1, length]) * response_mask


def make_batch(seed: int, n_groups=3, group_size=4, max_turns=4, L=6):
    """Rows as verl-agent's TrajectoryCollector leaves them: one per active turn, trajectories interleaved."""
    rng = random.Random(seed)
    rows = []
    for g in range(n_groups):
        uid = f"uid-{seed}-{g}"
        for k in range(group_size):
            traj = f"traj-{seed}-{g}-{k}"
            n = rng.randint(1, max_turns)
            ep_reward = 0.0
            turn_rows = []
            for t in range(n):
                r = 10.0 if (t == n - 1 and rng.random() < 0.5) else 0.0
                ep_reward += r
                turn_rows.append({"uid": uid, "traj_uid": traj, "anchor_obs": f"state {rng.randint(0, 2)} at {t}",
                                  "rewards": r, "t": t, "obs": f"obs {traj} {t}", "act": f"act {t}"})
            for tr in turn_rows:
                tr["episode_rewards"] = ep_reward
            rows.append(turn_rows)
    # interleave trajectories the way the env loop emits them, keeping each trajectory's turn order
    flat = []
    queues = [list(r) for r in rows]
    while any(queues):
        q = rng.choice([q for q in queues if q])
        flat.append(q.pop(0))
    bs = len(flat)
    nt = {
        "uid": np.array([r["uid"] for r in flat], dtype=object),
        "traj_uid": np.array([r["traj_uid"] for r in flat], dtype=object),
        "anchor_obs": np.array([r["anchor_obs"] for r in flat], dtype=object),
        "rewards": np.array([np.float32(r["rewards"]) for r in flat], dtype=object),
        "active_masks": np.array([True] * bs, dtype=object),
        "is_action_valid": np.ones(bs, dtype=bool),
        "episode_rewards": np.array([r["episode_rewards"] for r in flat], dtype=np.float32),
        "episode_lengths": np.array([0] * bs, dtype=np.int32),
    }
    response_mask = torch.zeros(bs, L)
    for i in range(bs):
        response_mask[i, : rng.randint(1, L)] = 1
    token_level_rewards = torch.zeros(bs, L)
    for i in range(bs):  # verl-agent's episode reward manager: the episode reward on the turn's last token
        token_level_rewards[i, int(response_mask[i].sum()) - 1] = float(nt["episode_rewards"][i])
    tensors = {"response_mask": response_mask, "token_level_rewards": token_level_rewards}
    tensors["advantages"] = verl_agent_gigpo(nt, token_level_rewards, response_mask)
    return DataProto(tensors, nt), flat


def credit_cli(groups):
    req = {"estimator": "gigpo", "params": {"gamma": GAMMA, "mode": "mean_std_norm", "epsilon": EPS},
           "groups": [{"uid": uid, "trajectories": [{"id": f"{uid}#{i}", "turns": [{"anchor": t["anchor"], "reward": t["reward"]} for t in tr["turns"]]}
                                                    for i, tr in enumerate(trs)]} for uid, trs in groups.items()]}
    out = subprocess.run(["npm", "run", "--silent", "credit"], input=json.dumps(req), capture_output=True, text=True, cwd=REPO, check=True)
    return {t["id"]: t["advantages"] for t in json.loads(out.stdout)["trajectories"]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stored_advantages_are_the_trainers_and_match_lib_credit_gigpo(seed):
    batch, flat = make_batch(seed)
    groups = batch_to_groups(batch, observations=[r["obs"] for r in flat], actions=[r["act"] for r in flat])
    assert len(groups) == 3 and all(len(v) == 4 for v in groups.values())
    row_adv = {(r["traj_uid"], r["t"]): float(batch.batch["advantages"][i][batch.batch["response_mask"][i].bool()][0]) for i, r in enumerate(flat)}
    expected = credit_cli(groups)
    for uid, trajs in groups.items():
        for i, tr in enumerate(trajs):
            traj_uid = tr["turns"][0]["observation"].split()[1]
            assert [t["observation"] for t in tr["turns"]] == [f"obs {traj_uid} {k}" for k in range(len(tr["turns"]))]
            assert [t["advantage"] for t in tr["turns"]] == pytest.approx([row_adv[(traj_uid, k)] for k in range(len(tr["turns"]))], abs=1e-6)
            assert [t["advantage"] for t in tr["turns"]] == pytest.approx(expected[f"{uid}#{i}"], abs=1e-4)
            assert tr["success"] == (tr["reward"] > 0) and tr["turns"][-1]["done"]


def test_response_tokens_and_their_log_probs_pass_through():
    batch, flat = make_batch(3)
    bs, L = batch.batch["response_mask"].shape
    g = torch.Generator().manual_seed(3)
    batch.batch["responses"] = torch.randint(5, 100, (bs, L), generator=g)
    batch.batch["old_log_probs"] = -torch.rand(bs, L, generator=g)
    groups = batch_to_groups(batch, observations=[r["obs"] for r in flat], actions=[r["act"] for r in flat])
    by_obs = {t["observation"]: t for trs in groups.values() for tr in trs for t in tr["turns"]}
    for i, r in enumerate(flat):
        keep = batch.batch["response_mask"][i].bool()
        t = by_obs[r["obs"]]
        assert t["token_ids"] == batch.batch["responses"][i][keep].tolist()
        assert t["token_logprobs"] == pytest.approx(batch.batch["old_log_probs"][i][keep].tolist())
        assert len(t["token_advantages"]) == len(t["token_ids"]) and "token_entropies" not in t


def test_inactive_rows_are_skipped_and_the_step_reaches_the_server(server):
    import turnlens

    batch, flat = make_batch(7)
    batch.non_tensor_batch["active_masks"][0] = False
    groups = batch_to_groups(batch)
    assert sum(len(t["turns"]) for trs in groups.values() for t in trs) == len(flat) - 1
    with turnlens.init(project="client-tests", name="verl", url=server.url, env_id="sokoban") as run:
        log_verl_step(run, make_batch(7)[0], step=3, estimator="gigpo", params={"gamma": GAMMA})
    trs = server.trajectories(run.id, 3)
    assert len(trs) == 12
    stored = [t for tr in trs for t in server.get(f"/api/v1/trajectories/{tr['id']}")["turns"]]
    assert len(stored) == len(flat) and all(t["anchor"].startswith("state ") and t["advantage"] is not None for t in stored)
