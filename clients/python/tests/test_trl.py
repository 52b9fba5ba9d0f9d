"""The TRL callback and importer against TRL's real GRPOTrainer (from PyPI) training a tiny randomly
initialised GPT-2 on CPU for a few steps (no hub download): the run's metrics, every generation
batch's completions grouped by position, the advantages TRL trained with, the estimator label that
recomputes them, and the completion parquet files TRL wrote, imported."""

import json
import urllib.parse

import pytest

trl = pytest.importorskip("trl", reason="trl is not installed (scripts/test.sh installs it into a venv; pip install trl)")
datasets = pytest.importorskip("datasets", reason="datasets (a trl dependency) is not installed")

import turnlens  # noqa: E402

# float32 arithmetic in TRL against float64 in TurnLens: advantages of size ~1 agree to ~1e-6.
TOL = 2e-5


def tiny_model_and_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = ["count the apples", "one two three four five", "the answer is five", "add two and three", "left right up down"]
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["<pad>", "<eos>", "<unk>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    cfg = GPT2Config(vocab_size=tokenizer.vocab_size, n_positions=64, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return GPT2LMHeadModel(cfg), tokenizer


def says_five(completions, **kwargs):
    return [float("five" in c) for c in completions]


def words(completions, **kwargs):
    # quarters are exact in float32, so equal rewards stay equal and all-equal groups get exactly 0
    return [-0.25 * len(c.split()) for c in completions]


def spy_on_batches(trainer):
    """What TRL itself trained on: the advantages tensor `_generate_and_score_completions` returns, per batch."""
    batches = []
    inner = trainer._generate_and_score_completions

    def spy(inputs):
        out = inner(inputs)
        if trainer.model.training:
            batches.append({"step": trainer.state.global_step + 1, "prompts": [x["prompt"] for x in inputs],
                            "advantages": out["advantages"].tolist()})
        return out

    trainer._generate_and_score_completions = spy
    return batches


def step_groups(server, run_id, step):
    """[(uid, stored group credit)] of one step, in generation-batch order (the uid starts with the position)."""
    groups = sorted(server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"], key=lambda g: g["uid"])
    return [(g["uid"], server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit"), g["id"]) for g in groups]


def recompute(server, run_id, step, group_id, estimator, params):
    q = urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)})
    return server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{group_id}/credit?{q}")


def test_grpo_metrics_and_completions_reach_turnlens(server, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    # distinct prompts, so each step's batch is 2 prompts x 4 generations = 2 groups of 4
    prompts = ["count the apples", "add two and three", "one two three", "left right up", "the answer is",
               "count one two", "add four and five", "up down left"]
    dataset = Dataset.from_dict({"prompt": prompts})

    def short(completions, **kwargs):
        return [-len(c) / 100 for c in completions]

    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], num_generations=4, max_steps=2,
                      per_device_train_batch_size=8, max_completion_length=6, logging_steps=1, save_strategy="no",
                      reward_weights=[1.0, 0.5], seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[says_five, short], args=args, train_dataset=dataset)
    run = turnlens.init(project="client-tests", name="trl-grpo", config={"num_generations": 4}, url=server.url)
    trainer.add_callback(TurnLensCallback(run, trainer))
    trainer.train()
    assert run._finished, "the callback finishes the run when training ends"

    keys = {k["key"] for k in server.get(f"/api/v1/runs/{run.id}/metrics")["keys"]}
    assert {"train/reward", "train/loss", "train/rewards/says_five/mean", "train/completions/mean_length"} <= keys, keys
    metrics = server.metrics(run.id)
    assert set(metrics["train/reward"]) == {1, 2}

    steps = server.steps(run.id)["steps"]
    assert sorted(s["step"] for s in steps) == [1, 2]
    for s in steps:
        assert s["groups"] == 2 and s["trajectories"] == 8
        assert s["estimator"] == "grpo"
    trs = server.trajectories(run.id, 2)
    by_prompt = {}
    for tr in trs:
        t = server.get(f"/api/v1/trajectories/{tr['id']}")["turns"][0]
        by_prompt.setdefault(tr["uid"], set()).add(t["observation"])
        r = t["info"]["rewards"]
        assert t["reward"] == pytest.approx(r["says_five"] + 0.5 * r["short"], abs=1e-6)
        assert t["advantage"] is not None
        assert tr["success"] == (t["reward"] > 0.0)  # the default rule: reward above 0
    assert len(by_prompt) == 2 and all(len(v) == 1 for v in by_prompt.values())
    assert all(sum(1 for tr in trs if tr["uid"] == uid) == 4 for uid in by_prompt)
    assert server.get(f"/api/v1/runs/{run.id}")["status"] == "succeeded"


# (scale_rewards, multi_objective_aggregation) -> the label the step must carry
MODES = {
    ("group", "sum_then_normalize"): "grpo",
    ("none", "sum_then_normalize"): "drgrpo",
    ("batch", "sum_then_normalize"): "trl:grpo-batch",
    ("group", "normalize_then_sum"): "trl:grpo-normalize-then-sum",
}


@pytest.mark.parametrize("scale,aggregation", list(MODES))
def test_every_batch_by_position_with_trls_advantages(server, tmp_path, monkeypatch, scale, aggregation):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from turnlens.importers import run_import
    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    # Two dataset rows with one prompt; a generation batch (16 = 4 rows x 4 generations, used for 2 optimizer
    # steps) holds the whole dataset, so every batch has both: they must be two groups of 4, not one of 8.
    dataset = Dataset.from_dict({"prompt": ["count the apples", "count the apples", "add two and three", "one two three"]})
    out = tmp_path / "out"
    args = GRPOConfig(output_dir=str(out), use_cpu=True, report_to=[], num_generations=4, max_steps=6,
                      per_device_train_batch_size=8, steps_per_generation=2, max_completion_length=6,
                      logging_steps=10, save_strategy="no", reward_weights=[1.0, 0.5], scale_rewards=scale,
                      multi_objective_aggregation=aggregation, log_completions=True, seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[says_five, words], args=args, train_dataset=dataset)
    batches = spy_on_batches(trainer)
    run = turnlens.init(project="client-tests", name=f"trl-{scale}-{aggregation}", url=server.url)
    trainer.add_callback(TurnLensCallback(run, trainer, success_threshold=0.5))
    trainer.train()

    # every generation batch (steps 1, 3, 5), though TRL logged (logging_steps=10) only at the end
    assert [b["step"] for b in batches] == [1, 3, 5]
    steps = {s["step"]: s for s in server.steps(run.id)["steps"]}
    assert sorted(steps) == [1, 3, 5]
    expected = MODES[(scale, aggregation)]
    exact = not expected.startswith("trl:")
    mismatched_with_default_eps = 0
    for b in batches:
        s = steps[b["step"]]
        assert s["groups"] == 4 and s["trajectories"] == 16 and s["estimator"] == expected
        groups = step_groups(server, run.id, b["step"])
        observations = []
        for g, (uid, stored, group_id) in enumerate(groups):
            rows = range(4 * g, 4 * g + 4)
            assert uid.startswith(f"{g:04d}-")
            assert [t["index"] for t in stored["trajectories"]] == [0, 1, 2, 3]
            assert len({b["prompts"][i] for i in rows}) == 1
            first_turn = server.get(f"/api/v1/trajectories/{stored['trajectories'][0]['id']}")["turns"][0]
            assert first_turn["observation"] == b["prompts"][rows[0]]
            # the advantages TRL trained with, row by row
            stored_adv = [a[0] for a in stored["advantages"]]
            assert stored_adv == pytest.approx([b["advantages"][i] for i in rows], abs=1e-6)
            for t in stored["trajectories"]:
                assert t["success"] == (t["reward"] > 0.5)
            trained = stored["trained"]
            assert trained["estimator"] == expected
            if exact:
                again = recompute(server, run.id, b["step"], group_id, trained["estimator"], trained["params"])
                assert [a[0] for a in again["advantages"]] == pytest.approx(stored_adv, abs=TOL), (uid, trained)
            else:
                assert set(trained["params"]) == {"trainer", "note"} and trained["params"]["note"]
                assert trained["params"]["trainer"]["scale_rewards"] == scale
            if (scale, aggregation) == ("group", "sum_then_normalize"):
                default = recompute(server, run.id, b["step"], group_id, "grpo", {"epsilon": 1e-6})
                mismatched_with_default_eps += any(abs(x[0] - y) > TOL for x, y in zip(default["advantages"], stored_adv))
            if (scale, aggregation) == ("batch", "sum_then_normalize"):
                grpo = recompute(server, run.id, b["step"], group_id, "grpo", {"epsilon": 1e-4})
                mismatched_with_default_eps += any(abs(x[0] - y) > TOL for x, y in zip(grpo["advantages"], stored_adv))
            observations.append(b["prompts"][rows[0]])
        # the duplicated prompt: two groups of 4
        assert sorted(observations) == sorted(["count the apples", "count the apples", "add two and three", "one two three"])
    if (scale, aggregation) == ("group", "sum_then_normalize"):
        assert mismatched_with_default_eps, "TurnLens's default epsilon (1e-6) would not reproduce TRL's (1e-4)"
    if (scale, aggregation) == ("batch", "sum_then_normalize"):
        assert mismatched_with_default_eps, "batch-scaled advantages are not per-group GRPO"

    # The parquet files TRL wrote (log_completions=True): one per logging step, here only the final log (step 6,
    # the batch generated for step 5). Each imports with every row; a second import stores nothing new.
    files = sorted((out / "completions").glob("completions_*.parquet"))
    assert [f.name for f in files] == ["completions_00006.parquet"]
    monkeypatch.setenv("TURNLENS_TRL_REWARD_WEIGHTS", json.dumps({"says_five": 1.0, "words": 0.5}))
    first = run_import("trl", str(out), project="client-tests", url=server.url)
    assert len(first) == 1 and first[0].imported == 16 and not first[0].rejected, first[0].as_dict()
    again = run_import("trl", str(out), project="client-tests", url=server.url)
    assert again[0].run_id == first[0].run_id and again[0].imported == 0 and again[0].already == 16
    imported = server.steps(first[0].run_id)["steps"]
    assert [(s["step"], s["groups"], s["trajectories"]) for s in imported] == [(6, 4, 16)]
    assert imported[0]["estimator"] == expected
    ours = step_groups(server, run.id, 5)
    theirs = step_groups(server, first[0].run_id, 6)
    assert [u for u, _, _ in theirs] == [u for u, _, _ in ours]
    for (_, a, _), (_, b, _) in zip(ours, theirs):
        assert [t["reward"] for t in a["trajectories"]] == [t["reward"] for t in b["trajectories"]]
        assert [x[0] for x in a["advantages"]] == [x[0] for x in b["advantages"]]
        assert b["trained"] == a["trained"] or not exact
    if (scale, aggregation) == ("group", "sum_then_normalize"):
        # without the weights (the files do not record them) the rewards are unweighted sums, which no TRL mode
        # turns into the stored advantages: labelled as not recomputable rather than guessed
        import shutil

        copy = tmp_path / "copy"
        shutil.copytree(out / "completions", copy)
        monkeypatch.delenv("TURNLENS_TRL_REWARD_WEIGHTS")
        plain = run_import("trl", str(copy), project="client-tests", url=server.url)[0]
        assert plain.imported == 16 and not plain.rejected
        step = server.steps(plain.run_id)["steps"][0]
        assert step["estimator"] == "trl:grpo"
        _, credit, _ = step_groups(server, plain.run_id, 6)[0]
        assert "TURNLENS_TRL_REWARD_WEIGHTS" in credit["trained"]["params"]["note"]


def test_rollout_func_multi_turn_split_by_env_mask(server, tmp_path):
    """TRL's `rollout_func` path: the function returns token ids with an `env_mask` (1 = model tokens, 0 =
    environment feedback); each model run becomes a turn whose observation is the feedback before it."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    vocab = [tokenizer.convert_tokens_to_ids(w) for w in ["one", "two", "three", "four", "five", "left", "up"]]
    feedback = tokenizer("the answer is")["input_ids"]
    gen = torch.Generator().manual_seed(0)
    episodes = []

    def rollout_func(prompts, trainer):
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": []}
        for p in prompts:
            first = [vocab[int(i)] for i in torch.randint(len(vocab), (2,), generator=gen)]
            second = [vocab[int(i)] for i in torch.randint(len(vocab), (1,), generator=gen)] + [tokenizer.eos_token_id]
            ids = first + feedback + second
            out["prompt_ids"].append(tokenizer(p)["input_ids"])
            out["completion_ids"].append(ids)
            out["logprobs"].append([0.0] * len(ids))
            out["env_mask"].append([1] * len(first) + [0] * len(feedback) + [1] * len(second))
            episodes.append((p, tokenizer.decode(first), tokenizer.decode(second, skip_special_tokens=True)))
        return out

    dataset = Dataset.from_dict({"prompt": ["count the apples", "add two and three"]})
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], num_generations=4, max_steps=2,
                      per_device_train_batch_size=8, max_completion_length=8, logging_steps=10, save_strategy="no", seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[says_five], args=args,
                          train_dataset=dataset, rollout_func=rollout_func)
    batches = spy_on_batches(trainer)
    run = turnlens.init(project="client-tests", name="trl-rollout-func", url=server.url)
    trainer.add_callback(TurnLensCallback(run, trainer, success_threshold=0.5))
    trainer.train()

    assert [b["step"] for b in batches] == [1, 2] and len(episodes) == 16
    for b in batches:
        groups = step_groups(server, run.id, b["step"])
        assert len(groups) == 2 and groups[0][1]["trained"]["estimator"] == "grpo"
        for g, (_, stored, _) in enumerate(groups):
            for t in stored["trajectories"]:
                i = 4 * g + t["index"]
                prompt, first, second = episodes[(b["step"] - 1) * 8 + i]
                turns = server.get(f"/api/v1/trajectories/{t['id']}")["turns"]
                assert [(u["observation"], u["action"]) for u in turns] == [(prompt, first), ("the answer is", second)]
                assert [u["reward"] for u in turns] == [0.0, float("five" in f"{first} the answer is {second}")]
                assert [u["advantage"] for u in turns] == pytest.approx([b["advantages"][i]] * 2, abs=1e-6)
                assert t["success"] == ("five" in f"{first}{second}") and t["truncated"] is False


def test_tool_loop_messages_become_turns():
    """The completion TRL's `_tool_call_loop` builds for `tools=` / `environment_factory`: the assistant message
    with tool_calls, the tool results it appends ({"role": "tool", "name", "content": str(result)}), the next
    assistant message, ... (parse_response's shape)."""
    from turnlens.integrations.trl_rollouts import turns_from_messages

    call = {"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    completion = [{"role": "assistant", "content": "", "tool_calls": [call]},
                  {"role": "tool", "name": "add", "content": "3"},
                  {"role": "assistant", "content": "", "tool_calls": [call, call]},
                  {"role": "tool", "name": "add", "content": "3"}, {"role": "tool", "name": "add", "content": "{'error': 'x'}"},
                  {"role": "assistant", "content": "It is 3."}]
    turns = turns_from_messages("user: add 1 and 2", completion)
    assert [t["observation"] for t in turns] == ["user: add 1 and 2", "tool: 3", "tool: 3\ntool: {'error': 'x'}"]
    assert [t["action"] for t in turns] == [json.dumps([call]), json.dumps([call, call]), "It is 3."]
    # a tool result after the last assistant message (the loop stops at max_tool_calling_iterations) is kept
    cut = turns_from_messages("p", completion[:2])
    assert len(cut) == 1 and cut[0]["final_observation"] == "tool: 3"


@pytest.mark.parametrize("normalize,label", [(False, "rloo"), (True, "trl:rloo")])
def test_rloo_trainer_label(server, tmp_path, normalize, label):
    """RLOOTrainer (beta=0: no reference model to download): its leave-one-out advantage is TurnLens's `rloo`;
    with normalize_advantages it is not."""
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    dataset = Dataset.from_dict({"prompt": ["count the apples", "count the apples", "add two and three", "one two three"]})
    args = RLOOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], num_generations=4, max_steps=2,
                      per_device_train_batch_size=8, max_completion_length=6, logging_steps=10, save_strategy="no",
                      reward_weights=[1.0, 0.5], beta=0.0, normalize_advantages=normalize, seed=0)
    trainer = RLOOTrainer(model=model, processing_class=tokenizer, reward_funcs=[says_five, words], args=args, train_dataset=dataset)
    batches = spy_on_batches(trainer)
    run = turnlens.init(project="client-tests", name=f"trl-rloo-{normalize}", url=server.url)
    trainer.add_callback(TurnLensCallback(run, trainer))
    trainer.train()
    assert [b["step"] for b in batches] == [1, 2]
    for b in batches:
        groups = step_groups(server, run.id, b["step"])
        assert len(groups) == 2
        for g, (uid, stored, group_id) in enumerate(groups):
            stored_adv = [a[0] for a in stored["advantages"]]
            assert stored_adv == pytest.approx(b["advantages"][4 * g:4 * g + 4], abs=1e-6)
            assert stored["trained"]["estimator"] == label
            if label == "rloo":
                again = recompute(server, run.id, b["step"], group_id, "rloo", stored["trained"]["params"])
                assert [a[0] for a in again["advantages"]] == pytest.approx(stored_adv, abs=TOL)


def test_reused_generation_batch_is_stored_once(server, tmp_path):
    """steps_per_generation=2 with logging_steps=1: TRL trains two steps on one batch and writes it to two parquet
    files; the callback stores it once (step 1) and the importer imports it once, reporting the repeat."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from turnlens.importers import run_import
    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    dataset = Dataset.from_dict({"prompt": ["count the apples", "add two and three"]})
    out = tmp_path / "out"
    args = GRPOConfig(output_dir=str(out), use_cpu=True, report_to=[], num_generations=4, max_steps=2,
                      per_device_train_batch_size=4, steps_per_generation=2, max_completion_length=6, logging_steps=1,
                      save_strategy="no", log_completions=True, seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[words], args=args, train_dataset=dataset)
    run = turnlens.init(project="client-tests", name="trl-reuse", url=server.url)
    trainer.add_callback(TurnLensCallback(run, trainer))
    trainer.train()
    assert [(s["step"], s["trajectories"]) for s in server.steps(run.id)["steps"]] == [(1, 8)]
    assert sorted(f.name for f in (out / "completions").glob("*.parquet")) == ["completions_00001.parquet", "completions_00002.parquet"]
    rep = run_import("trl", str(out / "completions"), project="client-tests", url=server.url)[0]
    assert rep.imported == 8 and len(rep.rejected) == 1 and "completions_00002.parquet" == rep.rejected[0][0]
    assert "same generation batch as completions_00001.parquet" in rep.rejected[0][1]
    steps = server.steps(rep.run_id)["steps"]
    assert [(s["step"], s["groups"], s["estimator"]) for s in steps] == [(1, 2, "grpo")]

    # a damaged row: its group (normalised together by TRL) is reported and skipped, the other group imported
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(out / "completions" / "completions_00001.parquet")
    adv = table.column("advantage").to_pylist()
    adv[5] = None
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(table.set_column(table.column_names.index("advantage"), "advantage", pa.array(adv, pa.float64())),
                   bad / "completions_00001.parquet")
    rep = run_import("trl", str(bad), project="client-tests", url=server.url)[0]
    assert rep.imported == 4 and rep.rejected == [("completions_00001.parquet:row 5", "advantage: not a number; its group "
                                                   "(rows 4-7, normalised together by TRL) is not imported")]
    assert [(s["groups"], s["trajectories"], s["estimator"]) for s in server.steps(rep.run_id)["steps"]] == [(1, 4, "grpo")]


def test_several_generation_batches_in_one_step(server, tmp_path):
    """gradient_accumulation_steps=2 with steps_per_generation=1: TRL generates twice per optimizer step; the step
    is stored once with both batches, groups numbered on."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    dataset = Dataset.from_dict({"prompt": ["count the apples", "add two and three"]})
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], num_generations=4, max_steps=2,
                      per_device_train_batch_size=4, gradient_accumulation_steps=2, steps_per_generation=1,
                      max_completion_length=6, logging_steps=10, save_strategy="no", seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[words], args=args, train_dataset=dataset)
    batches = spy_on_batches(trainer)
    run = turnlens.init(project="client-tests", name="trl-two-batches", url=server.url)
    trainer.add_callback(TurnLensCallback(run, trainer))
    trainer.train()
    assert [b["step"] for b in batches] == [1, 1, 2, 2]
    assert [(s["step"], s["groups"], s["trajectories"], s["estimator"]) for s in sorted(server.steps(run.id)["steps"], key=lambda s: s["step"])] == [
        (1, 2, 8, "grpo"), (2, 2, 8, "grpo")]
    for step, pair in ((1, batches[:2]), (2, batches[2:])):
        groups = step_groups(server, run.id, step)
        assert [u[:5] for u, _, _ in groups] == ["0000-", "0001-"]
        for (_, stored, group_id), b in zip(groups, pair):
            assert [a[0] for a in stored["advantages"]] == pytest.approx(b["advantages"], abs=1e-6)
            again = recompute(server, run.id, step, group_id, "grpo", stored["trained"]["params"])
            assert [a[0] for a in again["advantages"]] == pytest.approx(b["advantages"], abs=TOL)


def test_importer_splits_tool_calling_completions(tmp_path):
    """A conversational tool-calling batch written the way TRL writes it (pandas `to_parquet` of the messages)
    imports as multi-turn trajectories; advantages of scale_rewards='group' label it `grpo`."""
    import pandas as pd

    from turnlens.importers.trl import read

    call = {"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    completions = [[{"role": "assistant", "content": "", "tool_calls": [call]}, {"role": "tool", "name": "add", "content": "3"},
                    {"role": "assistant", "content": f"It is {i}."}] for i in range(4)]
    std = (5 / 3) ** 0.5  # of [0, 1, 2, 3], unbiased
    pd.DataFrame({"step": [3] * 4, "prompt": [[{"role": "user", "content": "add 1 and 2"}]] * 4, "completion": completions,
                  "correct": [0.0, 1.0, 2.0, 3.0], "advantage": [(i - 1.5) / (std + 1e-4) for i in range(4)]}
                 ).to_parquet(tmp_path / "completions_00003.parquet")
    src = read(str(tmp_path))[0]
    body = next(r["body"] for r in src.records if r["kind"] == "steps")
    assert body["step"] == 3 and body["estimator"] == "grpo" and body["params"] == {"epsilon": 1e-4} and not src.rejected
    turns = body["groups"][0]["trajectories"][1]["turns"]
    assert [(t["observation"], t["action"]) for t in turns] == [("user: add 1 and 2", json.dumps([call])), ("tool: 3", "It is 1.")]
    assert [t["reward"] for t in turns] == [0.0, 1.0]


TRAIN_REPORTING_TO = r"""
import json, sys
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer
from test_trl import says_five, tiny_model_and_tokenizer, words

model, tokenizer = tiny_model_and_tokenizer()
dataset = Dataset.from_dict({"prompt": ["count the apples", "add two and three", "one two three", "left right up"]})
args = GRPOConfig(output_dir=sys.argv[1], use_cpu=True, report_to=sys.argv[2], run_name="grpo-" + sys.argv[2], num_generations=4,
                  max_steps=3, per_device_train_batch_size=8, max_completion_length=6, logging_steps=1, save_strategy="no",
                  reward_weights=[1.0, 0.5], log_completions=True, seed=0)
trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[says_five, words], args=args, train_dataset=dataset)
batches = []
inner = trainer._generate_and_score_completions

def spy(inputs):  # what TRL trained on: each batch's completions (decoded as TRL decodes them) and advantages
    out = inner(inputs)
    if trainer.model.training:
        batches.append({"step": trainer.state.global_step + 1, "prompts": [x["prompt"] for x in inputs],
                        "completions": tokenizer.batch_decode(out["completion_ids"], skip_special_tokens=True),
                        "advantages": out["advantages"].tolist()})
    return out

trainer._generate_and_score_completions = spy
trainer.train()
print(json.dumps(batches))
"""


@pytest.mark.parametrize("backend", ["trackio", "wandb"])
def test_grpo_report_to_imports_every_completion(server, tmp_path, backend):
    """GRPOTrainer with report_to="trackio" (Trackio's local project in TRACKIO_DIR) or "wandb" (an offline run in
    WANDB_DIR): the completions table it logs at every logging step imports as that step's rollouts, each
    completion and advantage as TRL trained on it; the curves sit at the trainer's global step. The training runs
    in its own process: Trackio reads TRACKIO_DIR when it is imported."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip(backend)
    from turnlens.importers import run_import

    here = Path(__file__).resolve().parent
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "PYTHONPATH": os.pathsep.join([str(here), str(here.parent)]),
           "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true"}
    env.pop("WANDB_API_KEY", None)
    out = subprocess.run([sys.executable, "-c", TRAIN_REPORTING_TO, str(tmp_path / "out"), backend], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    batches = json.loads(out.stdout.strip().splitlines()[-1])
    assert [b["step"] for b in batches] == [1, 2, 3]

    where = str(tmp_path / ("trackio" if backend == "trackio" else "wandb"))
    [rep] = run_import(backend, where, project="client-tests", url=server.url)
    # TRL logs the last table again when training ends: the repeat is reported, stored once
    assert [w for w, why in rep.rejected if "same generation batch" in why] and \
        all("same generation batch" in why or w == "system_metrics" for w, why in rep.rejected), rep.rejected
    run = server.get(f"/api/v1/runs/{rep.run_id}")
    assert run["name"] == f"grpo-{backend}" and run["config"]["num_generations"] == 4
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert sorted(steps) == [1, 2, 3] and all((s["groups"], s["trajectories"], s["estimator"]) == (2, 8, "grpo") for s in steps.values())
    for b in batches:
        trs = sorted(server.trajectories(rep.run_id, b["step"]), key=lambda t: (t["uid"], t["index"]))
        details = [server.get(f"/api/v1/trajectories/{t['id']}") for t in trs]
        assert [d["turns"][0]["observation"] for d in details] == b["prompts"]
        assert [d["turns"][0]["action"] for d in details] == b["completions"]
        # the float32 advantages TRL trained with, as the tracker stored them: exact
        assert [d["turns"][0]["advantage"] for d in details] == b["advantages"]
        assert all(d["success"] == (d["reward"] > 0.0) for d in details)  # the callback's default rule
    assert set(server.metrics(rep.run_id)["train/loss"]) == {1, 2, 3}

    again = run_import(backend, where, project="client-tests", url=server.url)
    assert [(r.run_id, r.imported, r.already) for r in again] == [(rep.run_id, 0, rep.imported)]


def test_importer_success_uses_the_callbacks_rule(tmp_path, monkeypatch):
    """Completions imported from the parquet files carry the outcome TurnLensCallback gives them (the weighted
    reward above success_threshold, 0.0 by default; TURNLENS_TRL_SUCCESS_THRESHOLD sets it), not all false."""
    import pandas as pd

    from turnlens.importers.trl import read

    rewards = [-1.0, 0.0, 0.25, 1.0]
    std = pd.Series(rewards).std()
    pd.DataFrame({"step": [1] * 4, "prompt": ["p"] * 4, "completion": [f"c{i}" for i in range(4)], "score": rewards,
                  "advantage": [(r - sum(rewards) / 4) / (std + 1e-4) for r in rewards]}).to_parquet(tmp_path / "completions_00001.parquet")

    def successes():
        body = next(r["body"] for r in read(str(tmp_path))[0].records if r["kind"] == "steps")
        return [t.get("success") for t in body["groups"][0]["trajectories"]]

    assert successes() == [False, False, True, True]
    monkeypatch.setenv("TURNLENS_TRL_SUCCESS_THRESHOLD", "0.5")
    assert successes() == [False, False, False, True]


def test_table_of_unique_prompts_is_reported(tmp_path, monkeypatch):
    """log_unique_prompts=True keeps one row per prompt: the groups TRL normalised cannot be rebuilt, so the table is
    reported (saying why), not imported as groups of unrelated prompts."""
    import pandas as pd

    from turnlens.importers.trl import read

    pd.DataFrame({"step": [1] * 4, "prompt": [f"p{i}" for i in range(4)], "completion": [f"c{i}" for i in range(4)],
                  "score": [0.0, 1.0, 0.0, 1.0], "advantage": [-0.8, 0.8, -0.8, 0.8]}).to_parquet(tmp_path / "completions_00001.parquet")
    [src] = read(str(tmp_path))
    assert not any(r["kind"] == "steps" for r in src.records)
    assert [w for w, _ in src.rejected] == ["completions_00001.parquet"] and "log_unique_prompts=True" in src.rejected[0][1]
    monkeypatch.setenv("TURNLENS_TRL_NUM_GENERATIONS", "2")  # what the run's config says: still not one prompt per group
    [src] = read(str(tmp_path))
    assert "rows 0-1 hold several prompts" in src.rejected[0][1] and "log_unique_prompts=True" in src.rejected[0][1]
