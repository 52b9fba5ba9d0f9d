"""slime's debug dumps. slime is not on PyPI (another project owns the name) and its trainer needs
Megatron and SGLang, so its writers were not run here: the files are written in the layout of its
code, torch.save of {"rollout_id", "samples": [Sample.to_dict()]} (save_debug_rollout_data) and the
format_version 2 train payload (_build_dump_payload: samples in rollout order with sample_index,
rollout_position and the per-sample training fields, raw_reward at the top), with slime's GRPO
advantages (_post_process_rewards: n_samples_per_prompt consecutive samples, (r - mean) / (std + 1e-6),
or the whole batch when the count is not n x rollout_batch_size; get_grpo_returns: that value on every
response token). The check is against that layout, not slime's own writer."""

import json
import sqlite3
import urllib.parse

import pytest

from turnlens import cli
from turnlens.importers import run_import

torch = pytest.importorskip("torch")


def sample_dict(group, index, prompt, prompt_ids, parts, response, reward, status="completed"):
    """Sample.to_dict(): every Sample field; parts alternate model tokens (loss_mask 1) and tool tokens (0)."""
    resp, mask = [], []
    for i, part in enumerate(parts):
        resp += part
        mask += [1 if i % 2 == 0 else 0] * len(part)
    return {
        "group_index": group,
        "index": index,
        "rollout_id": None,
        "prompt": prompt,
        "tokens": prompt_ids + resp,
        "multimodal_inputs": None,
        "multimodal_train_inputs": None,
        "multimodal_train_input_id": None,
        "apply_chat_template_kwargs": {},
        "response": response,
        "response_length": len(resp),
        "label": "4",
        "reward": reward,
        "loss_mask": mask,
        "weight_versions": ["1"],
        "rollout_log_probs": [-0.1 * (j + 1) if m else 0.0 for j, m in enumerate(mask)],
        "rollout_top_p_token_ids": None,
        "rollout_top_p_token_offsets": None,
        "rollout_routed_experts": None,
        "remove_sample": False,
        "teacher_log_probs": None,
        "status": status,
        "metadata": {"turns": len(parts) // 2 + 1},
        "generate_function_path": None,
        "custom_rm_path": None,
        "train_metadata": None,
        "session_id": None,
        "non_generation_time": 0.0,
        "spec_info": {
            "spec_accept_token_num": 0,
            "spec_draft_token_num": 0,
            "spec_verify_ct": 0,
            "completion_token_num": 0,
        },
        "prefix_cache_info": {"cached_tokens": 0, "total_prompt_tokens": 0},
    }


def slime_rewards(raw, n):
    """_post_process_rewards for grpo with rewards_normalization and grpo_std_normalization, in float32."""
    r = torch.tensor(raw, dtype=torch.float)
    r = r.reshape(-1, n) if r.shape[-1] % n == 0 else r.view(-1, r.shape[-1])
    r = r - r.mean(dim=-1, keepdim=True)
    return (r / (r.std(dim=-1, keepdim=True) + 1e-6)).flatten().tolist()


def train_payload(rollout_id, samples, rewards):
    """_build_dump_payload's result for one DP shard: per-sample training fields in rollout order."""
    rows = []
    for i, (s, r) in enumerate(zip(samples, rewards)):
        n = s["response_length"]
        lp = torch.tensor(s["rollout_log_probs"]) - 0.01
        rows.append(
            {
                "data_parallel_rank": 0,
                "sample_index": s["index"],
                "rollout_position": i,
                "tokens": torch.tensor(s["tokens"]),
                "response_lengths": n,
                "total_lengths": len(s["tokens"]),
                "loss_masks": torch.tensor(s["loss_mask"], dtype=torch.int),
                "rewards": r,
                "truncated": 0,
                "rollout_ids": i,
                "rollout_mask_sums": float(sum(s["loss_mask"])),
                "rollout_log_probs": torch.tensor(s["rollout_log_probs"]),
                "log_probs": lp,
                "ref_log_probs": lp - 0.02,
                "advantages": torch.ones(n) * r,
                "returns": torch.ones(n) * r,
                "kl": torch.full((n,), 0.02),
                "entropy": torch.full((n,), 0.7),
            }
        )
    return {
        "format_version": 2,
        "rollout_id": rollout_id,
        "rank": 0,
        "samples": rows,
        "dp_shards": [
            {
                "rank": 0,
                "data_parallel_rank": 0,
                "sample_indices": [s["index"] for s in samples],
                "partition": None,
                "micro_batch_indices": [[list(range(len(samples)))]],
                "num_microbatches": [1],
                "global_batch_sizes": [len(samples)],
            }
        ],
        "raw_reward": [s["reward"] for s in samples],
    }


def credit(server, run_id, step, group_id, estimator=None, params=None):
    q = (
        ""
        if estimator is None
        else "?" + urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)})
    )
    return server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{group_id}/credit{q}")


def test_slime_debug_dumps(server, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    (dump / "rollout_data").mkdir(parents=True)
    (dump / "train_data").mkdir()
    chat = [{"role": "user", "content": "2+2?"}]
    s0 = [
        sample_dict(0, 0, chat, [1, 2], [[10, 11], [30, 31], [12]], "<tool>calc</tool>4", 1.0),  # two model turns
        sample_dict(0, 1, chat, [1, 2], [[13]], "5", 0.0),
        sample_dict(0, 2, chat, [1, 2], [[14, 15]], "four", 0.5, status="truncated"),
        sample_dict(1, 3, "3+3?", [3], [[20]], "6", 1.0),
        sample_dict(1, 4, "3+3?", [3], [[21]], "7", 0.0),
        sample_dict(1, 5, "3+3?", [3], [[22]], "6!", 1.0),
    ]
    r0 = slime_rewards([s["reward"] for s in s0], 3)
    torch.save({"rollout_id": 0, "samples": s0}, dump / "rollout_data" / "0.pt")
    torch.save(train_payload(0, s0, r0), dump / "train_data" / "0.pt")
    # 5 samples, not 2 x 3: slime normalises the whole batch together; TurnLens's grpo (per group) does not
    s1 = [sample_dict(g, i, "q", [5], [[40 + i]], "a", float(i % 2)) for i, g in enumerate([0, 0, 0, 1, 1])]
    torch.save({"rollout_id": 1, "samples": s1}, dump / "rollout_data" / "1.pt")
    torch.save(train_payload(1, s1, slime_rewards([s["reward"] for s in s1], 3)), dump / "train_data" / "1.pt")
    torch.save({"rollout_id": 2, "samples": s1[:2]}, dump / "rollout_data" / "2.pt")  # no train dump
    torch.save({"rollout_id": 0, "samples": s1[:1]}, dump / "rollout_data" / "eval_0.pt")
    np = pytest.importorskip("numpy")
    odd = dict(s1[0], metadata={"scores": np.arange(2)})  # a numpy array: weights_only refuses it
    torch.save({"rollout_id": 3, "samples": [odd]}, dump / "rollout_data" / "3.pt")

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
