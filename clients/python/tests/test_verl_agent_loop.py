"""verl (volcengine/verl 0.9) agent-loop batches: one row per multi-turn trajectory, model tokens and
tool tokens told apart by response_mask. Advantages are computed by verl's own core_algos on a
DataProto built with verl's own classes; the integration must store one turn per run of model
tokens with exactly the trainer's advantages, label the step with the estimator and parameters the
trainer used, and the server's recompute must give the stored advantages back (or the step must say
that TurnLens cannot recompute it)."""

import random
import urllib.parse

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
pytest.importorskip("verl")
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402

from turnlens.integrations.verl import batch_to_groups, log_verl_step, training_estimator  # noqa: E402

PROMPT, RESP = 6, 40


def agent_loop_batch(seed, n_groups=3, n=4, end_on_tool=False):
    """What verl's AgentLoopManager._postprocess returns for ToolAgentLoop rollouts, after the reward
    step: right-padded responses of [model tokens][tool tokens][model tokens]..., response_mask 1 on
    the model's tokens only, rm_scores on the last valid token, __num_turns__ / turn_scores / tool_rewards."""
    rng = random.Random(seed)
    bs = n_groups * n
    response_mask = torch.zeros(bs, RESP, dtype=torch.long)
    attention_mask = torch.zeros(bs, PROMPT + RESP, dtype=torch.long)
    rm_scores = torch.zeros(bs, RESP)
    layout, num_turns, tool_rewards = [], [], []
    for i in range(bs):
        k = rng.randint(1, 3)
        pos, spans = 0, []
        for t in range(k):
            a = rng.randint(2, 6)
            spans.append((pos, pos + a))
            response_mask[i, pos:pos + a] = 1
            pos += a
            if t < k - 1 or (end_on_tool and i == 0):
                pos += rng.randint(1, 5)  # the tool's answer
        attention_mask[i, PROMPT - rng.randint(2, PROMPT):PROMPT] = 1
        attention_mask[i, PROMPT:PROMPT + pos] = 1
        rm_scores[i, pos - 1] = 1.0 if (end_on_tool and i == 0) else float(rng.choice([0.0, 0.5, 1.0]))
        layout.append(spans)
        num_turns.append(2 * k)
        tool_rewards.append([0.1 * t for t in range(k - 1)])
    g = torch.Generator().manual_seed(seed)
    tensors = {
        "prompts": torch.randint(5, 100, (bs, PROMPT), generator=g),
        "responses": torch.randint(5, 100, (bs, RESP), generator=g),
        "response_mask": response_mask,
        "attention_mask": attention_mask,
        "input_ids": torch.randint(5, 100, (bs, PROMPT + RESP), generator=g),
        "rm_scores": rm_scores,
        "values": torch.randn(bs, RESP, generator=g),
    }
    tool = np.empty(bs, dtype=object)
    tool[:] = tool_rewards
    scores = np.empty(bs, dtype=object)
    scores[:] = [[] for _ in range(bs)]
    nt = {
        "uid": np.array([f"p{seed}-{i // n}" for i in range(bs)], dtype=object),
        "__num_turns__": np.array(num_turns, dtype=np.int32),
        "tool_rewards": tool,
        "turn_scores": scores,
    }
    batch = DataProto.from_dict(tensors=tensors, non_tensors=nt)
    # ray_trainer.fit: token_level_scores from the reward step, token_level_rewards without KL in reward
    batch.batch["token_level_scores"] = batch.batch["rm_scores"]
    batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
    return batch, layout


def verl_advantage(batch, algo: AlgoConfig):
    """verl.trainer.ppo.ray_trainer.compute_advantage's dispatch, with verl's own core_algos functions."""
    b = batch.batch
    if algo.adv_estimator == "gae":
        adv, ret = core_algos.compute_gae_advantage_return(b["token_level_rewards"], b["values"], b["response_mask"], algo.gamma, algo.lam)
    elif algo.adv_estimator == "grpo":
        adv, ret = core_algos.compute_grpo_outcome_advantage(b["token_level_rewards"], b["response_mask"], batch.non_tensor_batch["uid"],
                                                             norm_adv_by_std_in_grpo=algo.norm_adv_by_std_in_grpo)
    else:
        fn = core_algos.get_adv_estimator_fn(algo.adv_estimator)
        adv, ret = fn(token_level_rewards=b["token_level_rewards"], response_mask=b["response_mask"], config=algo, index=batch.non_tensor_batch["uid"])
    b["advantages"], b["returns"] = adv, ret
    return batch


def credit(server, run_id, step, estimator=None):
    out = {}
    for g in server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"]:
        q = urllib.parse.urlencode({"estimator": estimator} if estimator else {})
        r = server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit?{q}")
        out[r["group"]["uid"]] = r
    return out


def test_turns_are_the_runs_of_model_tokens():
    batch, layout = agent_loop_batch(0)
    batch = verl_advantage(batch, AlgoConfig(adv_estimator="gae", gamma=0.99, lam=0.95))
    groups = batch_to_groups(batch)
    trajs = [t for uid in sorted(groups) for t in groups[uid]]
    assert len(trajs) == len(layout)
    for i, (tr, spans) in enumerate(zip(trajs, layout)):
        assert [t["tokenCount"] for t in tr["turns"]] == [e - s for s, e in spans]
        assert [t["token_ids"] for t in tr["turns"]] == [batch.batch["responses"][i][s:e].tolist() for s, e in spans]
        # GAE varies token by token: a turn stores the mean over its model tokens
        assert [t["advantage"] for t in tr["turns"]] == pytest.approx([float(batch.batch["advantages"][i][s:e].mean()) for s, e in spans], abs=1e-6)
        assert sum(t["reward"] for t in tr["turns"]) == pytest.approx(float(batch.batch["rm_scores"][i].sum()))
        assert tr["turns"][-1]["reward"] == pytest.approx(float(batch.batch["rm_scores"][i].sum())) and tr["turns"][-1]["done"]
        assert tr["turns"][0]["num_turns"] == 2 * len(spans) and tr["turns"][0]["tool_rewards"] == pytest.approx([0.1 * t for t in range(len(spans) - 1)])


CASES = [
    (AlgoConfig(adv_estimator="grpo"), "grpo", {"epsilon": 1e-6}),
    (AlgoConfig(adv_estimator="grpo", norm_adv_by_std_in_grpo=False), "drgrpo", {}),
    (AlgoConfig(adv_estimator="rloo"), "rloo", {}),
    (AlgoConfig(adv_estimator="reinforce_plus_plus", gamma=1.0), "reinforcepp", {"gamma": 1.0}),
    (AlgoConfig(adv_estimator="reinforce_plus_plus_baseline"), "reinforcepp_baseline", {}),
]


@pytest.mark.parametrize("algo,estimator,params", CASES, ids=[c[1] for c in CASES])
def test_verl_advantages_recompute_on_the_server(server, algo, estimator, params):
    import turnlens

    batch, layout = agent_loop_batch(1)
    batch = verl_advantage(batch, algo)
    assert training_estimator({"algorithm": algo}, "verl") == (estimator, params)
    with turnlens.init(project="client-tests", name=f"verl-{estimator}", url=server.url, env_id="tools") as run:
        log_verl_step(run, batch, step=1, config={"algorithm": algo})
    stored = credit(server, run.id, 1)
    recomputed = credit(server, run.id, 1, estimator)
    assert {r["trained"]["estimator"] for r in stored.values()} == {estimator}
    adv = batch.batch["advantages"]
    for uid, r in stored.items():
        rows = [i for i in range(len(layout)) if batch.non_tensor_batch["uid"][i] == uid]
        # the stored advantages are what verl produced (one value over a trajectory's model tokens)
        assert sorted(round(v[0], 5) for v in r["advantages"]) == sorted(round(float(adv[i][layout[i][0][0]]), 5) for i in rows)
        for s, c in zip(r["advantages"], recomputed[uid]["advantages"]):
            assert c == pytest.approx(s, rel=1e-5, abs=1e-5)
        assert recomputed[uid]["paramsFrom"] == "training"
    assert any(a != 0 for r in stored.values() for v in r["advantages"] for a in v)


@pytest.mark.parametrize("algo,name", [(AlgoConfig(adv_estimator="gae", gamma=0.99, lam=0.95), "gae"),
                                       (AlgoConfig(adv_estimator="reinforce_plus_plus", gamma=0.9), "reinforce_plus_plus")])
def test_what_turnlens_cannot_recompute_is_labelled_with_the_trainers_settings(server, algo, name):
    import turnlens

    batch, layout = agent_loop_batch(2)
    batch = verl_advantage(batch, algo)
    with turnlens.init(project="client-tests", name=f"verl-{name}", url=server.url, env_id="tools") as run:
        log_verl_step(run, batch, step=4, config={"algorithm": algo})
    r = next(iter(credit(server, run.id, 4).values()))
    assert r["trained"]["estimator"] == f"verl:{name}"
    p = r["trained"]["params"]
    assert p["trainer"]["adv_estimator"] == name and p["trainer"]["gamma"] == pytest.approx(algo.gamma) and p["note"]
    assert all(a is not None for v in r["advantages"] for a in v)


def test_reward_on_a_tool_token_is_not_claimed_recomputable_for_reinforcepp(server):
    import turnlens

    algo = AlgoConfig(adv_estimator="reinforce_plus_plus", gamma=1.0)
    batch, _ = agent_loop_batch(3, end_on_tool=True)
    batch = verl_advantage(batch, algo)
    with turnlens.init(project="client-tests", name="verl-rpp-tool-end", url=server.url, env_id="tools") as run:
        log_verl_step(run, batch, step=1, config={"algorithm": algo})
    r = next(iter(credit(server, run.id, 1).values()))
    assert r["trained"]["estimator"] == "verl:reinforcepp" and "tool token" in r["trained"]["params"]["note"]


def test_the_hook_logs_what_verls_compute_advantage_produced(server):
    """The legacy RayPPOTrainer.fit calls ray_trainer.compute_advantage by name, as here (needs the
    trainer module's imports: torchdata, datasets, ...; skipped where they are not installed)."""
    import turnlens
    from turnlens.integrations.verl import hook_compute_advantage

    ray_trainer = pytest.importorskip("verl.trainer.ppo.ray_trainer")
    orig = ray_trainer.compute_advantage
    algo = AlgoConfig(adv_estimator="rloo")
    batch, layout = agent_loop_batch(5)
    batch.meta_info["global_steps"] = 7
    with turnlens.init(project="client-tests", name="verl-hook", url=server.url, env_id="tools") as run:
        restore = hook_compute_advantage(run)
        try:
            out = ray_trainer.compute_advantage(batch, adv_estimator=algo.adv_estimator, gamma=algo.gamma, lam=algo.lam, num_repeat=4,
                                                norm_adv_by_std_in_grpo=True, config=algo)
        finally:
            restore()
    assert ray_trainer.compute_advantage is orig
    stored = credit(server, run.id, 7)
    recomputed = credit(server, run.id, 7, "rloo")
    assert {r["trained"]["estimator"] for r in stored.values()} == {"rloo"}
    assert sum(len(r["advantages"]) for r in stored.values()) == len(layout)
    for uid, r in stored.items():
        for s, c in zip(r["advantages"], recomputed[uid]["advantages"]):
            assert c == pytest.approx(s, rel=1e-5, abs=1e-5)
    adv = out.batch["advantages"]
    assert sorted(round(v[0], 5) for r in stored.values() for v in r["advantages"]) == sorted(round(float(adv[i][sp[0][0]]), 5) for i, sp in enumerate(layout))


class Ids:
    """A tokenizer's decode: ids as text, so the test can see which tokens each field got."""

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(str(int(i)) for i in ids)


def test_with_a_tokenizer_the_tool_tokens_are_the_next_turns_observation():
    batch, layout = agent_loop_batch(6)
    batch = verl_advantage(batch, AlgoConfig(adv_estimator="grpo"))
    groups = batch_to_groups(batch, tokenizer=Ids())
    trajs = [t for uid in sorted(groups) for t in groups[uid]]
    resp, prompts, attn = batch.batch["responses"], batch.batch["prompts"], batch.batch["attention_mask"]
    for i, (tr, spans) in enumerate(zip(trajs, layout)):
        turns = tr["turns"]
        assert turns[0]["observation"] == Ids().decode(prompts[i][attn[i][:PROMPT].bool()])
        for k, (s, e) in enumerate(spans):
            assert turns[k]["action"] == Ids().decode(resp[i][s:e])
            if k:
                assert turns[k]["observation"] == Ids().decode(resp[i][spans[k - 1][1]:s])
        assert all("tool_response" not in t for t in turns)
