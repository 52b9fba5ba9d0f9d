"""NeMo-RL's train_data_step<N>.jsonl, written by NeMo-RL's own code. NeMo-RL does not install here (its PyPI
package is a 0.0.0 placeholder and the trainer needs CUDA), so the files it writes with are copied unchanged into
tests/vendor/nemo_rl from NVIDIA-NeMo/RL at 7ea279a and imported with the modules the writing path never reaches
(Ray, W&B, MLflow, the tokenizer and multimodal stacks) stood in for (tests/vendor_stubs.py). A step goes as
grpo.py's training step takes it: message logs, batched_message_log_to_flat_message (the padded batch),
GRPOAdvantageEstimator.compute_advantage over the prompts' token ids (calculate_baseline_and_std_per_prompt), then
grpo.py's log_data through Logger.log_batched_dict_as_jsonl. grpo.py itself is the whole trainer (it imports vLLM,
Megatron and Ray at the top), so the few lines of it that join these pieces are repeated here, each naming its
source; the policy's prev_logprobs (a forward pass) are the sampler's minus 0.01."""

import json
import sqlite3
import urllib.parse

import pytest
from vendor_stubs import import_vendored

from turnlens import cli
from turnlens.importers import run_import

torch = pytest.importorskip("torch")
for _needed in ("numpy", "pydantic", "typing_extensions"):  # what the vendored modules import for real
    pytest.importorskip(_needed)

# Imported by the vendored modules, never reached by flattening, advantages or writing a jsonl.
STUBS = [
    *("mlflow", "ray", "requests", "swanlab", "wandb", "matplotlib", "matplotlib.pyplot", "torch.utils.tensorboard"),
    *("prometheus_client", "prometheus_client.parser", "prometheus_client.samples"),
    *("rich", "rich.box", "rich.console", "rich.logging", "rich.panel"),
    *("transformers", "transformers.tokenization_utils_base", "datasets"),
    *("nemo_rl.data.packing", "nemo_rl.data.chat_templates", "nemo_rl.models", "nemo_rl.models.policy"),
    *("nemo_rl.utils.fastokens", "nemo_rl.algorithms.loss"),
]
# text-only batches: no multimodal keys, no PackedTensor (isinstance checks against a stand-in class are False)
MULTIMODAL = {"nemo_rl.data.multimodal_utils": {"MULTIMODAL_CONTENT_TYPES": frozenset(), "NATIVE_MULTIMODAL_KEYS": frozenset()}}
nemo_logger, nemo_flat, nemo_adv = import_vendored(
    ["nemo_rl.utils.logger", "nemo_rl.data.llm_message_utils", "nemo_rl.algorithms.advantage_estimator"], STUBS, MULTIMODAL
)
PAD = 0  # tokenizer.pad_token_id


def logger_at(log_dir):
    """NeMo-RL's Logger with every backend off (logger: in the GRPO config)."""
    return nemo_logger.Logger({"log_dir": str(log_dir), "wandb_enabled": False, "swanlab_enabled": False,
                               "tensorboard_enabled": False, "mlflow_enabled": False, "wandb": {},
                               "monitor_gpus": False, "gpu_monitoring": {}})


def message_log(prompt, parts, content, generated=True):
    """A rollout's message log as NeMo-RL's multi-turn rollout builds it: the prompt's message, then per turn the
    model's reply (with the sampler's generation_logprobs) and the environment's answer."""
    texts = iter(content)
    log = [{"role": "user", "content": next(texts), "token_ids": torch.tensor(prompt)}]
    pos = len(prompt)
    for model, env in parts:
        reply = {"role": "assistant", "content": next(texts), "token_ids": torch.tensor(model)}
        if generated:
            reply["generation_logprobs"] = torch.tensor([-0.05 * (pos + j + 1) for j in range(len(model))])
        log.append(reply)
        pos += len(model)
        if env:
            log.append({"role": "environment", "content": next(texts), "token_ids": torch.tensor(env)})
            pos += len(env)
    return log


def grpo_step(logger, step, rollouts, leave_one_out=True, normalize=True):
    """One GRPO step's train_data_step<step>.jsonl. rollouts: (prompt ids, [(reply ids, answer ids)], message texts,
    reward[, generated]). Returns NeMo-RL's advantage of each sample."""
    logs = [message_log(p, parts, content, *rest[1:]) for p, parts, content, *rest in rollouts]
    rewards = torch.tensor([r[3] for r in rollouts], dtype=torch.float32)
    # grpo.py add_grpo_token_loss_masks_and_generation_logprobs: the generated replies are the trained tokens
    for log in logs:
        for m in log:
            trained = m["role"] == "assistant" and "generation_logprobs" in m
            m["token_loss_mask"] = torch.ones_like(m["token_ids"]) if trained else torch.zeros_like(m["token_ids"])
            if "generation_logprobs" not in m:
                m["generation_logprobs"] = torch.zeros_like(m["token_ids"], dtype=torch.float32)
    flat, input_lengths = nemo_flat.batched_message_log_to_flat_message(
        logs, pad_value_dict={"token_ids": PAD}, make_sequence_length_divisible_by=4
    )
    # grpo.py extract_initial_prompt_messages: the messages within the prompt's length, here the first
    prompt_flat, _ = nemo_flat.batched_message_log_to_flat_message([log[:1] for log in logs], pad_value_dict={"token_ids": PAD})
    sample_mask = torch.ones(len(logs))  # repeated_batch["loss_multiplier"]
    config = nemo_adv.AdvEstimatorConfig(use_leave_one_out_baseline=leave_one_out, normalize_rewards=normalize)
    advantages = nemo_adv.GRPOAdvantageEstimator(config, None).compute_advantage(
        prompt_ids=prompt_flat["token_ids"], rewards=rewards, mask=flat["token_loss_mask"] * sample_mask.unsqueeze(-1)
    )
    # grpo.py's log_data (synchronous GRPO, no dynamic sampling), in its order
    log_data = {
        "content": flat["content"],
        "rewards": rewards.tolist(),
        "input_lengths": input_lengths.tolist(),
        "token_ids": flat["token_ids"].tolist(),
        "token_loss_mask": flat["token_loss_mask"].tolist(),
        "sample_loss_mask": sample_mask.tolist(),
        "advantages": advantages.tolist(),
        "generation_logprobs": flat["generation_logprobs"].tolist(),
        "prev_logprobs": (flat["generation_logprobs"] - 0.01).tolist(),
    }
    logger.log_batched_dict_as_jsonl(log_data, f"train_data_step{step}.jsonl")
    return advantages[:, 0].tolist()


def credit(server, run_id, step, group_id, estimator=None, params=None):
    q = (
        ""
        if estimator is None
        else "?" + urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)})
    )
    return server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{group_id}/credit{q}")


def test_nemo_rl_train_data(server, tmp_path):
    logger = logger_at(tmp_path / "logs" / "exp_001")
    a, b = [1, 2, 3], [4, 5]
    step1 = [
        # prompt a, a two-turn rollout: (reply, environment answer) twice
        (a, [([10, 11], [30]), ([12], [31, 32])], ["sys: play", "go left", "<obs 1>", "go up", "<done>"], 1.0),
        (a, [([13, 14, 15], [33])], ["sys: play", "go down", "<lost>"], 0.0),
        (a, [([16], [34])], ["sys: play", "wait", "<lost>"], 0.0),
        (b, [([20], [40])], ["2+2?", "4", "correct"], 1.0),
        (b, [([21], [41])], ["2+2?", "5", "wrong"], 0.0),
        (a, [([17, 18], [35])], ["sys: play", "go right", "<won>"], 1.0),  # the same prompt again, not adjacent: one group
    ]
    advs1 = grpo_step(logger, 1, step1)  # NeMo-RL's defaults: leave-one-out, normalised
    step2 = [(a, [([10], [30])], ["sys: play", "x", "y"], r) for r in (1.0, 0.0, 0.5)] + [
        (b, [([20], [40])], ["2+2?", "4", "ok"], r) for r in (2.0, 1.0)
    ]
    # a prompt whose only assistant message came with the prompt (no generation_logprobs): nothing trained on
    advs2 = grpo_step(logger, 2, step2 + [([6, 7], [([8], [])], ["p", "q"], 0.0, False)], leave_one_out=False)[:5]
    written = [json.loads(x) for x in (tmp_path / "logs" / "exp_001" / "train_data_step1.jsonl").read_text().splitlines()]
    assert [r["idx"] for r in written] == list(range(6)) and all(len(r["token_ids"]) == 1 for r in written)
    assert all(len(r["token_ids"][0]) == 12 and len(r["advantages"][0]) == 12 for r in written)  # padded to a multiple of 4

    [rep] = run_import("nemo-rl", str(tmp_path / "logs"), project="nemo-imports", url=server.url)
    assert rep.imported == 11
    assert dict(rep.rejected) == {"train_data_step2.jsonl:6": "token_loss_mask: no token was trained on"}
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert steps[1]["estimator"] == "nemo-rl:grpo" and steps[1]["groups"] == 2 and steps[1]["trajectories"] == 6
    assert steps[2]["estimator"] == "grpo" and steps[2]["groups"] == 2

    # stored = what was written: turns, texts, tokens, logprobs, advantages, rewards
    trs = server.trajectories(rep.run_id, 1)
    full = {t["id"]: server.get(f"/api/v1/trajectories/{t['id']}") for t in trs}
    by_idx = {f["turns"][-1]["info"]["idx"]: (t, f) for t, f in ((t, full[t["id"]]) for t in trs)}
    t0, f0 = by_idx[0]
    assert [t["observation"] for t in f0["turns"]] == ["sys: play", "<obs 1>"]
    assert [t["action"] for t in f0["turns"]] == ["go left", "go up"]
    assert f0["turns"][1]["info"]["finalObservation"] == "<done>"
    assert [t["tokens"]["ids"] for t in f0["turns"]] == [[10, 11], [12]]
    assert f0["turns"][1]["info"]["observationTokenIds"] == [30]
    assert f0["turns"][0]["tokens"]["logprobs"] == [pytest.approx(-0.2, rel=1e-6), pytest.approx(-0.25, rel=1e-6)]
    assert f0["turns"][0]["info"]["tokens"]["prev_logprobs"] == [pytest.approx(-0.21), pytest.approx(-0.26)]
    assert [t["reward"] for t in f0["turns"]] == [0, 1.0]
    for i, adv in enumerate(advs1):
        turns = by_idx[i][1]["turns"]
        assert all(t["advantage"] == pytest.approx(adv, rel=1e-6, abs=1e-7) for t in turns)
    assert by_idx[0][0]["uid"] == by_idx[5][0]["uid"] != by_idx[3][0]["uid"]  # grouped by prompt, not by position

    # recompute-as-trained: step 2 (no leave-one-out, normalised) is TurnLens's grpo, epsilon 1e-6
    for g in server.get(f"/api/v1/runs/{rep.run_id}/steps/2/groups")["groups"]:
        c = credit(server, rep.run_id, 2, g["id"])
        again = credit(server, rep.run_id, 2, g["id"], "grpo", {"epsilon": 1e-6})
        assert again["advantages"] == [pytest.approx(x, rel=1e-5, abs=1e-6) for x in c["advantages"]]
    trs2 = server.trajectories(rep.run_id, 2)
    got = sorted(server.get(f"/api/v1/trajectories/{t['id']}")["turns"][0]["advantage"] for t in trs2)
    assert got == [pytest.approx(x, rel=1e-6, abs=1e-7) for x in sorted(advs2)]
    # and step 1's stored advantages are not TurnLens's grpo (the leave-one-out std): hence its label
    g1 = server.get(f"/api/v1/runs/{rep.run_id}/steps/1/groups")["groups"]
    big = next(g for g in g1 if g["trajectories"] == 4)
    c1 = credit(server, rep.run_id, 1, big["id"])
    r1 = credit(server, rep.run_id, 1, big["id"], "grpo", {"epsilon": 1e-6})
    assert c1["params"]["trainer"] == {"use_leave_one_out_baseline": True, "normalize_rewards": True}
    assert any(abs(x[0] - y[0]) > 1e-3 for x, y in zip(c1["advantages"], r1["advantages"]))

    [again] = run_import("nemo-rl", str(tmp_path / "logs"), project="nemo-imports", url=server.url)
    assert again.run_id == rep.run_id and (again.imported, again.already) == (0, 11)


def test_another_file_is_named(tmp_path, capsys):
    db = tmp_path / "model.sqlite"
    sqlite3.connect(db).execute("CREATE TABLE weights (x)").connection.commit()
    assert cli.main(["import", "nemo-rl", str(db), "--url", "http://127.0.0.1:9"]) in (1, 2)
    assert (
        "model.sqlite is an SQLite database with tables weights; the nemo-rl importer reads" in capsys.readouterr().err
    )


def test_distillation_files_are_named_once(server, tmp_path):
    """NeMo-RL's distillation loop writes train_data_step<N>.jsonl with content and input_lengths only
    (distillation.py: log_data = {"content": flat_messages["content"], "input_lengths": ...})."""
    content = [["q", "a"]] * 3
    logger_at(tmp_path).log_batched_dict_as_jsonl({"content": content, "input_lengths": [5, 5, 5]}, "train_data_step1.jsonl")
    [rep] = run_import("nemo-rl", str(tmp_path), project="nemo-imports", url=server.url)
    assert rep.imported == 0 and dict(rep.rejected) == {
        "train_data_step1.jsonl": "holds content and input_lengths only (NeMo-RL's distillation writes that): no tokens, "
        "rewards or advantages to import"
    }
