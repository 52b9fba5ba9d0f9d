"""The SkyRL callback and dump importer against SkyRL's own trainer loop (skyrl 0.3.0 from PyPI, installed
with --no-deps from requirements-skyrl-nodeps.txt) on CPU: `RayPPOTrainer.train()` runs two real steps,
with SkyRL's own batch conversion, reward post-processing, `compute_advantages_and_returns`
(ppo_utils' GRPO / RLOO), advantage rescaling, callback dispatch and `trainer.dump_data_batch` pickles.

Stubbed, because they need GPUs and an inference engine: the rollout generator (vLLM + environment:
a fixed multi-turn `GeneratorOutput` per prompt instead), the worker dispatch (Ray GPU workers: stage,
forward_backward, optim_step are no-ops), the forward pass producing log-probs and values
(`fwd_logprobs_values_reward`), and the metrics tracker. The prompts come from a small in-memory dataset
with PromptDataset's collate_fn layout instead of a parquet file.

SkyRL 0.3.0 declares Python >= 3.11, but skyrl/tinker/types.py uses `typing.TypedDict` in a pydantic
model, which pydantic refuses below 3.12: the import below puts typing_extensions.TypedDict in its place
while SkyRL's modules load.
"""

import asyncio
import json
import typing
import urllib.parse
import warnings

import pytest

pytest.importorskip("skyrl", reason="skyrl is not installed (scripts/test.sh installs it into a venv with --no-deps)")
pytest.importorskip("jaxtyping", reason="jaxtyping (a skyrl dependency) is not installed")
typing_extensions = pytest.importorskip("typing_extensions")

_td = typing.TypedDict
typing.TypedDict = typing_extensions.TypedDict
try:
    from skyrl.backends.skyrl_train.utils import ppo_utils
    from skyrl.train import trainer as skyrl_trainer
    from skyrl.train.config import SkyRLTrainConfig
finally:
    typing.TypedDict = _td

import turnlens  # noqa: E402
from turnlens.importers import run_import  # noqa: E402
from turnlens.integrations.skyrl import TurnLensSkyRLCallback  # noqa: E402

# SkyRL computes in float32, TurnLens in float64: advantages of size ~1 agree to ~1e-6.
TOL = 2e-5
PROMPTS = ["count the apples", "add two and three", "left right up down", "the answer is five"]


def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = PROMPTS + ["one two three four five", "look go take obs ok done"]
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["<pad>", "<eos>", "<unk>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


class Prompts:
    """PromptDataset's item and collate_fn layout over in-memory prompts."""

    def __init__(self, texts):
        self.texts = texts

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        return [{"role": "user", "content": self.texts[i]}], None, {}, str(i)

    def collate_fn(self, items):
        return [{"prompt": p, "env_class": e, "env_extras": x, "uid": u} for p, e, x, u in items]


class Generator:
    """Stands in for vLLM + the environment: each trajectory is two model turns with environment tokens
    between them (loss_mask 0), and a response-level reward."""

    def __init__(self, tok, rewards):
        self.tok, self.rewards, self.calls = tok, rewards, 0

    async def generate(self, inp):
        enc = self.tok.encode
        prompt_ids, responses, masks, rewards = [], [], [], []
        for k, msgs in enumerate(inp["prompts"]):
            act1, obs, act2 = enc("look " * (1 + k % 2) + "go"), enc("obs ok"), enc("take " * (1 + k % 3) + "done")
            prompt_ids.append(enc(msgs[0]["content"]))
            responses.append(act1 + obs + act2 + [self.tok.eos_token_id])
            masks.append([1] * len(act1) + [0] * len(obs) + [1] * (len(act2) + 1))
            rewards.append(self.rewards[(self.calls * 7 + k) % len(self.rewards)])
        self.calls += 1
        n = len(responses)
        logprobs = [[-0.5 - 0.01 * j for j in range(len(r))] for r in responses]
        return {
            "prompt_token_ids": prompt_ids,
            "response_ids": responses,
            "rewards": rewards,
            "loss_masks": masks,
            "stop_reasons": ["stop"] * n,
            "rollout_metrics": {},
            "rollout_logprobs": logprobs,
        }


class StepWiseGenerator(Generator):
    """generator.step_wise_trajectories: one row per turn, the context so far as its prompt, is_last_step
    on a trajectory's final turn (11 rows for 8 trajectories: SkyRL pads one row for two data-parallel ranks)."""

    async def generate(self, inp):
        from skyrl.train.generators.base import TrajectoryID

        enc = self.tok.encode
        out = {k: [] for k in ("prompt_token_ids", "response_ids", "rewards", "loss_masks", "rollout_logprobs")}
        out["is_last_step"], out["trajectory_ids"] = [], []
        for k, (msgs, tid) in enumerate(zip(inp["prompts"], inp["trajectory_ids"])):
            context = enc(msgs[0]["content"])
            steps = 2 if k % 3 == 0 else 1
            for j in range(steps):
                resp = enc("look " * (1 + j + k % 2) + "go") + [self.tok.eos_token_id]
                last = j == steps - 1
                out["prompt_token_ids"].append(list(context))
                out["response_ids"].append(resp)
                out["loss_masks"].append([1] * len(resp))
                out["rollout_logprobs"].append([-0.25] * len(resp))
                out["rewards"].append(self.rewards[(self.calls * 7 + k) % len(self.rewards)] if last else 0.0)
                out["is_last_step"].append(last)
                out["trajectory_ids"].append(TrajectoryID(instance_id=tid.instance_id, repetition_id=tid.repetition_id))
                context = context + resp + enc("obs ok")
        self.calls += 1
        n = len(out["response_ids"])
        return {**out, "stop_reasons": ["stop"] * n, "rollout_metrics": {}}


class Dispatch:
    """Stands in for the Ray GPU workers."""

    dp = 1

    def get_lcm_dp_size(self):
        return self.dp

    def init_weight_sync_state(self, client):
        pass

    async def save_weights_for_sampler(self):
        pass

    def stage_data(self, model, data, boundaries):
        return [[(model, s, e)] for s, e in boundaries]

    def forward_backward_from_staged(self, model, refs):
        return type("Status", (), {"metrics": {"policy_loss": 0.0}})()

    def optim_step(self, model):
        return 0.0

    def empty_cache(self, model=None):
        pass


class Tracker:
    def log(self, payload, step, commit=True):
        pass

    def finish(self):
        pass


def make_trainer(tmp_path, estimator, callbacks, n_samples=4, norm_by_std=True):
    cfg = SkyRLTrainConfig()
    t = cfg.trainer
    t.algorithm.advantage_estimator = estimator
    t.algorithm.grpo_norm_by_std = norm_by_std
    t.train_batch_size, t.policy_mini_batch_size, t.epochs = 2, 2, 1
    t.ckpt_interval, t.hf_save_interval, t.eval_interval, t.resume_mode = -1, -1, -1, "none"
    t.placement.colocate_all, t.print_example_interval = False, -1
    t.dump_data_batch, t.export_path = True, str(tmp_path / "export")
    cfg.generator.n_samples_per_prompt = n_samples
    cfg.generator.inference_engine.enable_ray_prometheus_stats = False
    cfg.data.dataloader.num_workers = 0
    t.enable_ray_gpu_monitor = False
    tok = tokenizer()
    gen = Generator(tok, [1.0, 0.0, 0.5, 0.25, 0.75, 0.0, 1.0])
    trainer = skyrl_trainer.RayPPOTrainer(
        cfg, Tracker(), tok, Prompts(PROMPTS), inference_engine_client=None, generator=gen, callbacks=callbacks
    )
    trainer.dispatch = Dispatch()

    def fwd_logprobs_values_reward(batch):  # the policy / reference / critic forward passes run on GPU workers
        batch["base_action_log_probs"] = batch["action_log_probs"] = batch["values"] = None
        return batch

    trainer.fwd_logprobs_values_reward = fwd_logprobs_values_reward
    return trainer


def spy_on_estimator(monkeypatch):
    """What SkyRL's own advantage function returned, per call (the trainer calls it through ppo_utils)."""
    calls = []
    inner = ppo_utils.compute_advantages_and_returns

    def spy(**kw):
        adv, ret = inner(**kw)
        mask = kw["response_mask"].bool()
        calls.append(
            {
                "uids": list(kw["index"]),
                "rewards": kw["token_level_rewards"].sum(-1).tolist(),
                "advantages": [adv[i][mask[i]].tolist() for i in range(adv.shape[0])],
            }
        )
        return adv, ret

    monkeypatch.setattr(ppo_utils, "compute_advantages_and_returns", spy)
    return calls


def credit(server, run_id, step, estimator=None, params=None):
    out = {}
    for g in server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"]:
        q = urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params or {})} if estimator else {})
        r = server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit?{q}")
        out[r["group"]["uid"]] = r
    return out


def check_step(server, run_id, step, call, estimator, params):
    stored = credit(server, run_id, step)
    by_uid = {}
    for uid, reward, adv in zip(call["uids"], call["rewards"], call["advantages"]):
        by_uid.setdefault(uid, []).append((reward, adv))
    assert sorted(stored) == sorted(by_uid)
    recomputed = credit(server, run_id, step, estimator, params)
    for uid, rows in by_uid.items():
        r = stored[uid]
        assert len(r["advantages"]) == len(rows)
        for (reward, adv), st, rc in zip(rows, r["advantages"], recomputed[uid]["advantages"]):
            assert len(st) == 2  # two model turns; the environment tokens between them are the second's observation
            # each turn's advantage is SkyRL's over its tokens (one value per trajectory for outcome estimators)
            assert st == pytest.approx([adv[0], adv[-1]], abs=TOL)
            assert rc == pytest.approx(st, abs=TOL)  # recompute as trained = stored
    return stored


def turns_of(server, traj):
    return server.get(f"/api/v1/trajectories/{traj['id']}")["turns"]


def test_grpo_steps_reach_turnlens_at_the_trainers_steps_and_recompute(server, tmp_path, monkeypatch):
    calls = spy_on_estimator(monkeypatch)
    run = turnlens.init(project="skyrl", name="grpo", url=server.url)
    trainer = make_trainer(tmp_path, "grpo", [TurnLensSkyRLCallback(run)])
    asyncio.run(trainer.train())  # the callback finishes the run at on_train_end
    steps = server.steps(run.id)["steps"]
    assert sorted(s["step"] for s in steps) == [1, 2]
    assert all(s["estimator"] == "grpo" for s in steps)
    assert len(calls) == 2
    for step, call in zip((1, 2), calls):
        stored = check_step(server, run.id, step, call, "grpo", {"epsilon": 1e-6})
        assert any(a != 0 for r in stored.values() for t in r["advantages"] for a in t)
        # rewards as SkyRL's estimator summed them, per trajectory
        trajs = sorted(server.trajectories(run.id, step), key=lambda t: (t["uid"], t["index"]))
        got = [t["reward"] for t in trajs]
        want = [r for _, r in sorted(zip(call["uids"], call["rewards"]), key=lambda x: x[0])]
        assert sorted(got) == pytest.approx(sorted(want))
    # texts from the trainer's tokenizer: the prompt, each action, the environment tokens as the next observation
    traj = server.trajectories(run.id, 1)[0]
    turns = turns_of(server, traj)
    assert turns[0]["observation"] in PROMPTS
    assert turns[0]["action"].split()[-1] == "go" and turns[1]["observation"] == "obs ok"
    assert turns[1]["action"].split()[-1] == "done" and turns[1]["done"]

    # the same steps from SkyRL's own dump (trainer.dump_data_batch): no rewards or uids in it, same advantages
    [rep] = run_import("skyrl", str(tmp_path / "export"), project="skyrl-imports", url=server.url)
    dumped = server.steps(rep.run_id)["steps"]
    assert sorted(s["step"] for s in dumped) == [1, 2]
    assert all(s["estimator"] == "skyrl:dump" for s in dumped)
    for step, call in zip((1, 2), calls):
        stored = credit(server, rep.run_id, step)
        assert sorted(stored) == ["prompt-0", "prompt-1"]
        got = sorted(round(t[0], 5) for r in stored.values() for t in r["advantages"])
        assert got == sorted(round(a[0], 5) for a in call["advantages"])
    metrics = server.metrics(rep.run_id)
    assert set(metrics["skyrl/avg_final_rewards"]) == {1, 2}
    [again] = run_import("skyrl", str(tmp_path / "export"), project="skyrl-imports", url=server.url)
    assert again.run_id == rep.run_id and again.imported == 0


@pytest.mark.parametrize(
    "estimator,norm_by_std,label,params", [("rloo", True, "rloo", {}), ("grpo", False, "drgrpo", {})]
)
def test_rloo_and_grpo_without_std_recompute_as_trained(
    server, tmp_path, monkeypatch, estimator, norm_by_std, label, params
):
    calls = spy_on_estimator(monkeypatch)
    run = turnlens.init(project="skyrl", name=label, url=server.url)
    trainer = make_trainer(tmp_path, estimator, [TurnLensSkyRLCallback(run)], norm_by_std=norm_by_std)
    trainer.cfg.trainer.max_training_steps = 1
    asyncio.run(trainer.train())
    [step] = server.steps(run.id)["steps"]
    assert step["estimator"] == label
    stored = check_step(server, run.id, 1, calls[0], label, params)
    assert any(a != 0 for r in stored.values() for t in r["advantages"] for a in t)


def test_step_wise_rows_are_the_turns_of_a_trajectory_and_the_padding_row_is_dropped(server, tmp_path, monkeypatch):
    calls = spy_on_estimator(monkeypatch)
    run = turnlens.init(project="skyrl", name="step-wise", url=server.url)
    trainer = make_trainer(tmp_path, "grpo", [TurnLensSkyRLCallback(run)])
    trainer.cfg.generator.step_wise_trajectories = True
    trainer.cfg.trainer.max_training_steps = 1
    trainer.generator = StepWiseGenerator(trainer.tokenizer, trainer.generator.rewards)
    trainer.dispatch.dp = 2
    asyncio.run(trainer.train())
    [step] = server.steps(run.id)["steps"]
    assert step["estimator"] == "grpo"
    # SkyRL's estimator ran on the last step of each trajectory (and the padding row, a group of its own)
    [call] = calls
    assert len(call["uids"]) == 9 and call["uids"][-1] == "pad0"
    stored = credit(server, run.id, 1)
    assert sorted(stored) == sorted(set(call["uids"][:-1]))
    recomputed = credit(server, run.id, 1, "grpo", {"epsilon": 1e-6})
    lengths = []
    for uid, r in stored.items():
        want = sorted(round(a[0], 5) for u, a in zip(call["uids"], call["advantages"]) if u == uid)
        assert sorted(round(t[0], 5) for t in r["advantages"]) == want
        for st, rc in zip(r["advantages"], recomputed[uid]["advantages"]):
            assert len(set(st)) == 1  # the last step's advantage on every turn, as SkyRL broadcasts it
            assert rc == pytest.approx(st, abs=TOL)
            lengths.append(len(st))
    assert sorted(lengths) == [1, 1, 1, 1, 1, 2, 2, 2]
    # a later step's observation is what the environment added to the context, not the whole context
    two = [t for t in server.trajectories(run.id, 1) if t["length"] == 2]
    turns = turns_of(server, two[0])
    assert turns[0]["observation"] in PROMPTS and turns[1]["observation"] == "obs ok"
    assert not turns[0]["done"] and turns[1]["done"]


def test_rloo_with_one_sample_a_prompt_is_labelled_skyrls_own(server, tmp_path, monkeypatch):
    """SkyRL's RLOO gives a group of one 0 (verl's and TurnLens's give its reward): stored as SkyRL's, labelled skyrl:rloo."""
    calls = spy_on_estimator(monkeypatch)
    run = turnlens.init(project="skyrl", name="rloo-1", url=server.url)
    trainer = make_trainer(tmp_path, "rloo", [TurnLensSkyRLCallback(run)], n_samples=1)
    trainer.cfg.trainer.max_training_steps = 1
    asyncio.run(trainer.train())
    [step] = server.steps(run.id)["steps"]
    assert step["estimator"] == "skyrl:rloo"
    stored = credit(server, run.id, 1)
    assert len(stored) == 2 and all(a == [0.0, 0.0] for r in stored.values() for a in r["advantages"])
    assert calls[0]["rewards"] != [0.0, 0.0]  # the rewards were not 0: SkyRL's rule made the advantages 0


def test_a_failing_run_never_stops_training(tmp_path, monkeypatch):
    class Broken:
        def log_rollouts(self, *a, **k):
            raise RuntimeError("disk full")

        def finish(self):
            raise RuntimeError("disk full")

    calls = spy_on_estimator(monkeypatch)
    trainer = make_trainer(tmp_path, "grpo", [TurnLensSkyRLCallback(Broken())])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        asyncio.run(trainer.train())
    assert len(calls) == 2  # both steps trained
    msgs = [str(w.message) for w in seen if "turnlens" in str(w.message)]
    assert any("step 1 were not logged (RuntimeError: disk full)" in m for m in msgs)
    assert any("finishing the run failed" in m for m in msgs)


def test_a_dump_is_never_run_as_code(tmp_path):
    """The importer builds only SkyRL's batch classes and plain data: a pickle naming anything else is refused."""
    import pickle

    from turnlens.importers import skyrl as skyrl_import

    class Evil:
        def __reduce__(self):
            return (open, (str(tmp_path / "pwned"), "w"))

    d = tmp_path / "dumped_data"
    d.mkdir()
    (d / "global_step_3_training_input.pkl").write_bytes(pickle.dumps(Evil()))
    [src] = skyrl_import.read(str(tmp_path))
    assert not (tmp_path / "pwned").exists()
    assert src.records == [] or all(r["kind"] == "metrics" for r in src.records)
    [(where, why)] = src.rejected
    assert where == "global_step_3_training_input.pkl"
    assert "io.open: not part of a SkyRL training batch dump, refused" in why
