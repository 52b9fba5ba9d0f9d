"""slime's debug dumps, written by slime's own code. slime is not on PyPI (another project owns the name) and its
trainer needs Megatron and SGLang, so its files are copied unchanged into tests/vendor/slime from THUDM/slime at
624b824 and imported with what the writing path never reaches (Ray, SGLang, Megatron, the rollout servers) stood
in for (tests/vendor_stubs.py). A rollout goes as slime takes it: Samples built with Sample.append_response_tokens
(model tokens with their log probs, tool tokens untrained), save_debug_rollout_data, then
RolloutManager._convert_samples_to_train_data (the group-normalised rewards of _post_process_rewards), the actor's
GRPO step (compute_approx_kl, get_grpo_returns: advantages = returns) and save_debug_train_data on one rank (its
megatron.core.mpu answers as a single-GPU run; torch.distributed is a real one-process gloo group). What the
actor's model computes (log_probs, ref_log_probs, entropy) is made up: the rollout's log probs minus 0.01, minus
0.02 more, and 0.7. The split into DP shards (_split_train_data_by_dp) is one shard, every sample in order."""

import json
import sqlite3
import types
import urllib.parse

import pytest
from vendor_stubs import import_vendored, stubbed

from turnlens import cli
from turnlens.importers import run_import

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

# Imported by rollout.py (the rollout servers, Ray, SGLang, metrics) and slime.utils.misc (HTTP helpers): never
# reached by _post_process_rewards, _convert_samples_to_train_data or the dump writers.
STUBS = [
    *("ray.util", "ray.util.scheduling_strategies", "sglang", "sglang.srt", "sglang.srt.constants", "slime.backends"),
    *("slime.backends.sglang_utils", "slime.backends.sglang_utils.external", "slime.backends.sglang_utils.sglang_config"),
    *("slime.backends.sglang_utils.sglang_engine", "slime.observability.logging_utils", "slime.observability.rollout_metrics"),
    *("slime.rollout", "slime.rollout.base_types", "slime.rollout.sample_hooks", "slime.utils.dp_schedule"),
    *("slime.utils.health_monitor", "slime.utils.http_utils", "slime.ray.rollout_validation", "slime.ray.utils"),
]
slime_types, rollout_dump, train_dump, ppo, rollout = import_vendored(
    ["slime.utils.types", "slime.observability.rollout_data_utils", "slime.observability.train_data_utils",
     "slime.utils.ppo_utils", "slime.ray.rollout"],
    STUBS,
    {"ray": {"remote": lambda cls: cls}},  # @ray.remote class RolloutManager: the class itself
)
Sample = slime_types.Sample
# megatron.core.mpu of a run on one GPU (TP = PP = CP = DP = 1); all_gather_with_cp is the identity at CP = 1
MPU = types.SimpleNamespace(
    is_pipeline_last_stage=lambda ignore_virtual=False: True, get_tensor_model_parallel_rank=lambda: 0,
    get_context_parallel_rank=lambda: 0, get_data_parallel_rank=lambda with_context_parallel=False: 0,
    get_data_parallel_world_size=lambda with_context_parallel=False: 1,
    get_data_parallel_src_rank=lambda with_context_parallel=False: 0,
)
ONE_RANK = {"megatron": {}, "megatron.core": {"mpu": MPU}, "slime.backends": {},
            "slime.backends.megatron_utils": {},
            "slime.backends.megatron_utils.cp_utils": {"all_gather_with_cp": lambda t, total, response: t}}


def sample(group, index, prompt, prompt_ids, parts, response, reward, status="completed", metadata=None):
    """A Sample as a multi-turn generate function builds it: parts alternate the model's tokens (trained, with
    their log probs) and a tool's tokens (appended untrained)."""
    s = Sample(group_index=group, index=index, prompt=prompt, tokens=list(prompt_ids), label="4", reward=reward,
               weight_versions=["1"], metadata=metadata if metadata is not None else {"turns": len(parts) // 2 + 1})
    for i, part in enumerate(parts):
        if i % 2 == 0:
            lp = [-0.1 * (s.response_length + j + 1) for j in range(len(part))]
            s.append_response_tokens(tokens=part, log_probs=lp, trainable=True)
        else:
            s.append_response_tokens(tokens=part, trainable=False)
    s.response = response
    s.status = Sample.Status(status)
    return s


def rollout_manager(tmp):
    """RolloutManager (the Ray actor, without its servers) with slime's GRPO settings: --n-samples-per-prompt 3,
    --rollout-batch-size 2, reward normalisation with the std."""
    m = object.__new__(rollout.RolloutManager)
    m.args = types.SimpleNamespace(advantage_estimator="grpo", rewards_normalization=True, grpo_std_normalization=True,
                                   n_samples_per_prompt=3, rollout_batch_size=2, reward_key=None,
                                   save_debug_rollout_data=str(tmp / "rollout_data" / "{rollout_id}.pt"),
                                   save_debug_train_data=str(tmp / "train_data" / "{rollout_id}.pt"))
    m.custom_reward_post_process_func = m.custom_convert_samples_to_train_data_func = None
    return m


def train_step(manager, rollout_id, samples):
    """What one rollout's training writes: the rollout dump, then the train dump after the GRPO step."""
    rollout_dump.save_debug_rollout_data(manager.args.save_debug_rollout_data, samples, rollout_id=rollout_id, evaluation=False)
    data = manager._convert_samples_to_train_data(samples)
    # _split_train_data_by_dp with one DP rank: the per-sample keys in partition order, the rest whole
    data["total_lengths"] = [len(t) for t in data["tokens"]]
    rollout_data = {"partition": list(range(len(samples)))}
    rollout_data.update({k: v for k, v in data.items() if k != "source_names"})
    rollout_dump.tensorize_rollout_data_for_training(rollout_data)
    # the actor's forward passes (made up), then compute_advantages_and_returns for grpo with a k1 KL
    rollout_data["log_probs"] = [lp - 0.01 for lp in rollout_data["rollout_log_probs"]]
    rollout_data["ref_log_probs"] = [lp - 0.02 for lp in rollout_data["log_probs"]]
    kl = [ppo.compute_approx_kl(a, b, kl_loss_type="k1") for a, b in zip(rollout_data["log_probs"], rollout_data["ref_log_probs"])]
    rollout_data["kl"] = kl
    returns = ppo.get_grpo_returns(torch.tensor(rollout_data["rewards"], dtype=torch.float32), kl)
    rollout_data["advantages"], rollout_data["returns"] = list(returns), returns
    rollout_data["entropy"] = [torch.full_like(lp, 0.7) for lp in rollout_data["log_probs"]]
    with stubbed([], ONE_RANK):  # imported inside save_debug_train_data
        train_dump.save_debug_train_data(manager.args, rollout_id=rollout_id, rollout_data=rollout_data)
    return data["rewards"]


@pytest.fixture
def one_process_group(tmp_path):
    dist = torch.distributed
    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def credit(server, run_id, step, group_id, estimator=None, params=None):
    q = (
        ""
        if estimator is None
        else "?" + urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)})
    )
    return server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{group_id}/credit{q}")


def test_slime_debug_dumps(server, tmp_path, monkeypatch, one_process_group):
    dump = tmp_path / "dump"  # --dump-details dump
    manager = rollout_manager(dump)
    chat = [{"role": "user", "content": "2+2?"}]
    s0 = [
        sample(0, 0, chat, [1, 2], [[10, 11], [30, 31], [12]], "<tool>calc</tool>4", 1.0),  # two model turns
        sample(0, 1, chat, [1, 2], [[13]], "5", 0.0),
        sample(0, 2, chat, [1, 2], [[14, 15]], "four", 0.5, status="truncated"),
        sample(1, 3, "3+3?", [3], [[20]], "6", 1.0),
        sample(1, 4, "3+3?", [3], [[21]], "7", 0.0),
        sample(1, 5, "3+3?", [3], [[22]], "6!", 1.0),
    ]
    r0 = train_step(manager, 0, s0)
    # 5 samples, not 3 x 2: slime normalises the whole batch together; TurnLens's grpo (per group) does not
    s1 = [sample(g, i, "q", [5], [[40 + i]], "a", float(i % 2)) for i, g in enumerate([0, 0, 0, 1, 1])]
    train_step(manager, 1, s1)
    rollout_dump.save_debug_rollout_data(manager.args.save_debug_rollout_data, s1[:2], rollout_id=2, evaluation=False)  # no train dump
    rollout_dump.save_debug_rollout_data(manager.args.save_debug_rollout_data, {"math": {"samples": s1[:1]}}, rollout_id=0,
                                         evaluation=True)
    odd = sample(0, 0, "q", [5], [[40]], "a", 0.0, metadata={"scores": np.arange(2)})  # a numpy array: weights_only refuses it
    rollout_dump.save_debug_rollout_data(manager.args.save_debug_rollout_data, [odd], rollout_id=3, evaluation=False)
    written = torch.load(dump / "train_data" / "0.pt", weights_only=True)
    assert written["format_version"] == 2 and [x["rollout_position"] for x in written["samples"]] == list(range(6))
    assert written["samples"][0]["loss_masks"].tolist() == [1, 1, 0, 0, 1] and r0[3] == pytest.approx(0.57735, rel=1e-4)

    [rep] = run_import("slime", str(dump), project="slime-imports", url=server.url)
    assert rep.imported == 13
    assert dict(rep.rejected) == {
        "rollout_data/eval_0.pt": "an evaluation rollout (eval_<id>.pt): not trained on, not imported",
        "rollout_data/3.pt": "not loadable with weights_only=True (it holds numpy._core.multiarray._reconstruct); set "
        "TURNLENS_SLIME_TRUST_PICKLE=1 to load it with full unpickling, only for a file you trust",
    }
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert {k: v["estimator"] for k, v in steps.items()} == {0: "grpo", 1: "slime:grpo", 2: "slime:rollout"}
    assert steps[0]["groups"] == 2 and steps[0]["trajectories"] == 6

    # stored = what was written
    trs = server.trajectories(rep.run_id, 0)
    full = {}
    for t in trs:
        one_traj = server.get(f"/api/v1/trajectories/{t['id']}")
        full[one_traj["turns"][-1]["info"]["index"]] = (t, one_traj)
    t0, f0 = full[0]
    assert [t["tokens"]["ids"] for t in f0["turns"]] == [[10, 11], [12]]
    assert f0["turns"][0]["observation"] == "user: 2+2?" and f0["turns"][0]["info"]["response"] == "<tool>calc</tool>4"
    assert f0["turns"][1]["info"]["observationTokenIds"] == [30, 31] and f0["turns"][0]["info"][
        "observationTokenIds"
    ] == [1, 2]
    assert f0["turns"][0]["tokens"]["logprobs"] == [pytest.approx(-0.1), pytest.approx(-0.2)]
    assert f0["turns"][1]["tokens"]["entropies"] == [pytest.approx(0.7)]
    assert f0["turns"][0]["info"]["tokens"]["kl"] == [pytest.approx(0.02)] * 2
    assert [t["reward"] for t in f0["turns"]] == [0, 1.0]
    assert full[2][1]["turns"][0]["action"] == "four" and full[2][0]["truncated"] is True
    for i, r in enumerate(r0):
        assert all(t["advantage"] == pytest.approx(r, rel=1e-6, abs=1e-7) for t in full[i][1]["turns"])
    assert full[0][0]["uid"] == full[2][0]["uid"] != full[3][0]["uid"]

    # recompute-as-trained: TurnLens's grpo (epsilon 1e-6) gives the stored advantages
    for g in server.get(f"/api/v1/runs/{rep.run_id}/steps/0/groups")["groups"]:
        stored = credit(server, rep.run_id, 0, g["id"])["advantages"]
        again = credit(server, rep.run_id, 0, g["id"], "grpo", {"epsilon": 1e-6})["advantages"]
        assert again == [pytest.approx(x, rel=1e-5, abs=1e-6) for x in stored]

    [again] = run_import("slime", str(dump), project="slime-imports", url=server.url)
    assert again.run_id == rep.run_id and (again.imported, again.already) == (0, 13)
    [one] = run_import(
        "slime", str(dump / "rollout_data" / "2.pt"), project="slime-one", url=server.url
    )  # a .pt is a zip: read as it is
    assert one.imported == 2 and [s["estimator"] for s in server.steps(one.run_id)["steps"]] == ["slime:rollout"]
    assert server.get(f"/api/v1/runs/{one.run_id}")["name"] == "dump"  # the --dump-details folder, not rollout_data
    monkeypatch.setenv("TURNLENS_SLIME_TRUST_PICKLE", "1")  # the user trusts the file: it is read in full
    [trusted] = run_import("slime", str(dump), project="slime-imports", url=server.url)
    assert (trusted.imported, trusted.already) == (1, 13) and "rollout_data/3.pt" not in dict(trusted.rejected)


def test_another_file_is_named(tmp_path, capsys):
    db = tmp_path / "model.sqlite"
    sqlite3.connect(db).execute("CREATE TABLE weights (x)").connection.commit()
    assert cli.main(["import", "slime", str(db), "--url", "http://127.0.0.1:9"]) in (1, 2)
    assert "model.sqlite is an SQLite database with tables weights; the slime importer reads" in capsys.readouterr().err
