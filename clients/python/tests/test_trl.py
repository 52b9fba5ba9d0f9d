"""The TRL callback: GRPOTrainer from PyPI trains a tiny randomly initialised GPT-2 on CPU for two
steps (no hub download), and the run's metrics and completions appear in TurnLens."""

import pytest

trl = pytest.importorskip("trl", reason="trl is not installed (scripts/test.sh installs it into a venv; pip install trl)")
datasets = pytest.importorskip("datasets", reason="datasets (a trl dependency) is not installed")

import turnlens  # noqa: E402


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


def test_grpo_metrics_and_completions_reach_turnlens(server, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from turnlens.integrations.trl import TurnLensCallback

    model, tokenizer = tiny_model_and_tokenizer()
    # distinct prompts, so each step's batch is 2 prompts x 4 generations = 2 groups of 4
    prompts = ["count the apples", "add two and three", "one two three", "left right up", "the answer is",
               "count one two", "add four and five", "up down left"]
    dataset = Dataset.from_dict({"prompt": prompts})

    def says_five(completions, **kwargs):
        return [float("five" in c) for c in completions]

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
        assert s["groups"] == 2 and s["trajectories"] == 8  # grouped by prompt
    trs = server.trajectories(run.id, 2)
    by_prompt = {}
    for tr in trs:
        t = server.get(f"/api/v1/trajectories/{tr['id']}")["turns"][0]
        by_prompt.setdefault(tr["uid"], set()).add(t["observation"])
        r = t["info"]["rewards"]
        assert t["reward"] == pytest.approx(r["says_five"] + 0.5 * r["short"], abs=1e-6)
        assert t["advantage"] is not None
    assert len(by_prompt) == 2 and all(len(v) == 1 for v in by_prompt.values())
    assert all(sum(1 for tr in trs if tr["uid"] == uid) == 4 for uid in by_prompt)
    assert server.get(f"/api/v1/runs/{run.id}")["status"] == "succeeded"
