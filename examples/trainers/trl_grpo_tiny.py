"""TRL GRPO on a tiny randomly initialised GPT-2 (1 layer, 32 wide) built on the fly: no download, CPU
only, seconds per step. The `trl-grpo-tiny` template of trainers.json launches it from the dashboard;
run by hand it creates a run of its own:

    python examples/trainers/trl_grpo_tiny.py --steps 4 --lr 1e-3

Launched by a TurnLens worker, `turnlens.init()` writes into the launched run (TURNLENS_RUN_ID and
TURNLENS_WRITE_KEY), and the TRL callback logs the curves and every completion with its advantage.
"""

import argparse

import turnlens
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer
from turnlens.integrations.trl import TurnLensCallback

CORPUS = ["count the apples", "one two three four five", "the answer is five", "add two and three", "left right up down"]
PROMPTS = ["count the apples", "add two and three", "one two three", "left right up", "the answer is", "count one two",
           "add four and five", "up down left"]


def tiny_model_and_tokenizer():
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=["<pad>", "<eos>", "<unk>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    cfg = GPT2Config(vocab_size=tokenizer.vocab_size, n_positions=64, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                     pad_token_id=tokenizer.pad_token_id)
    return GPT2LMHeadModel(cfg), tokenizer


def says_five(completions, **kwargs):
    return [float("five" in c) for c in completions]


def short(completions, **kwargs):
    return [-len(c.split()) / 10 for c in completions]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", default="/tmp/turnlens-trl-grpo-tiny")
    a = p.parse_args()

    model, tokenizer = tiny_model_and_tokenizer()
    args = GRPOConfig(output_dir=a.output_dir, use_cpu=True, report_to=[], num_generations=a.num_generations,
                      max_steps=a.steps, per_device_train_batch_size=2 * a.num_generations, max_completion_length=6,
                      learning_rate=a.lr, logging_steps=1, save_strategy="no", seed=a.seed)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[says_five, short], args=args,
                          train_dataset=Dataset.from_dict({"prompt": PROMPTS * 4}))
    run = turnlens.init(project="examples", name="trl-grpo-tiny", config={"steps": a.steps, "lr": a.lr})
    trainer.add_callback(TurnLensCallback(run, trainer, success_threshold=0.5))
    trainer.train()  # the callback finishes the run (launched: the exit code does)
    print(f"trained {a.steps} GRPO steps", flush=True)


if __name__ == "__main__":
    main()
