"""verl 0.9.1's v1 trainer (`trainer.use_v1`, its default) through its own `_compute_advantage`: a real
PPOTrainerSync built from verl's generated ppo_trainer config, its batch written into the
TransferQueue by verl's own AgentLoopWorkerTQ._agent_loop_postprocess (keys "{uid}_{session}_{index}",
sessions with several outputs among them), padded by verl's upsample_batch_to_divisible_size as
_balance_batch pads it. What is stored must be one step per training step at the trainer's
global_steps, with texts and token ids, one trajectory per session, and the trainer's advantages,
which the server's recompute gives back.

Stubbed, because verl needs a Ray cluster or a GPU for them: the TransferQueue (its controller and
storage units are Ray actors; here an in-process store with the same kv_* calls, which, like
TransferQueue, returns per-row tensors as jagged nested tensors and skips fields it does not hold),
and the actor's log-prob pass (old_log_probs and entropy written as _compute_old_log_prob writes them)."""

import asyncio
import os
import random
import urllib.parse
import warnings

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
pytest.importorskip("verl")
tq = pytest.importorskip("transfer_queue")
from omegaconf import OmegaConf  # noqa: E402
from tensordict import NonTensorStack, TensorDict  # noqa: E402
from transfer_queue import KVBatchMeta  # noqa: E402

import verl  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput  # noqa: E402
from verl.trainer.ppo import ray_trainer  # noqa: E402
from verl.trainer.ppo.padding_utils import upsample_batch_to_divisible_size  # noqa: E402
from verl.trainer.ppo.v1 import utils as v1_utils  # noqa: E402
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ  # noqa: E402
from verl.trainer.ppo.v1.trainer_base import PPOTrainer  # noqa: E402
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync  # noqa: E402

import turnlens  # noqa: E402
from turnlens.integrations.verl import hook_compute_advantage, log_verl_step  # noqa: E402

PROMPTS, N = 3, 4  # 12 sessions a step
MULTIPLE = 8  # the dp / mini-batch multiple _balance_batch pads the batch to


def tokenizer():
    """A real transformers fast tokenizer over a word-level vocabulary (no model files to download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{f"w{i}": i for i in range(3, 120)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def _split(v):
    if isinstance(v, torch.Tensor):
        return list(v.unbind()) if v.is_nested else list(v)
    return list(v.tolist()) if hasattr(v, "tolist") else list(v)


class Store:
    """TransferQueue's kv_* calls over a dict."""

    def __init__(self):
        self.rows, self.tags = {}, {}

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None, data_parser=None):
        cols = {name: _split(fields.get(name)) for name in fields.keys()} if fields is not None else {}
        for i, k in enumerate(keys):
            self.rows.setdefault((partition_id, k), {}).update({name: col[i] for name, col in cols.items()})
            if tags:
                self.tags[(partition_id, k)] = {**self.tags.get((partition_id, k), {}), **tags[i]}
        return KVBatchMeta(
            keys=list(keys),
            tags=[dict(self.tags.get((partition_id, k), {})) for k in keys],
            partition_id=partition_id,
            fields=sorted({f for k in keys for f in self.rows[(partition_id, k)]}),
        )

    async def async_kv_batch_put(self, **kw):
        return self.kv_batch_put(**kw)

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        keys = [keys] if isinstance(keys, str) else keys
        rows = [self.rows[(partition_id, k)] for k in keys]
        names = [select_fields] if isinstance(select_fields, str) else select_fields or list(rows[0])
        out = {}
        for f in (f for f in names if f in rows[0]):
            vals = [r[f] for r in rows]
            if all(isinstance(v, torch.Tensor) and v.dim() > 0 for v in vals):
                out[f] = torch.nested.as_nested_tensor(vals, layout=torch.jagged)
            elif all(isinstance(v, torch.Tensor) for v in vals):
                out[f] = torch.stack(vals)
            else:
                out[f] = NonTensorStack(*vals)
        return TensorDict(out, batch_size=[len(keys)])

    def kv_clear(self, keys, partition_id):
        for k in [keys] if isinstance(keys, str) else keys:
            self.rows.pop((partition_id, k), None)
            self.tags.pop((partition_id, k), None)


@pytest.fixture
def store(monkeypatch):
    s = Store()
    for name in ("kv_batch_put", "async_kv_batch_put", "kv_batch_get", "kv_clear"):
        monkeypatch.setattr(tq, name, getattr(s, name))
    return s


@pytest.fixture(scope="module")
def tok():
    return tokenizer()


def make_trainer(tok, estimator="grpo"):
    cfg = OmegaConf.load(os.path.join(os.path.dirname(verl.__file__), "trainer/config/_generated_ppo_trainer.yaml"))
    cfg.algorithm.adv_estimator = estimator
    cfg.actor_rollout_ref.rollout.n = N
    trainer = PPOTrainerSync(cfg)
    trainer.tokenizer = tok
    return trainer


def worker():
    """verl's AgentLoopWorkerTQ without its Ray actor: what _agent_loop_postprocess reads of it."""
    w = object.__new__(AgentLoopWorkerTQ.__ray_metadata__.modified_class)
    w.reward_loop_worker_handles, w.distillation_enabled, w.processor = None, False, None
    return w


def output(rng, reward=None):
    """One agent-loop output: [model tokens][tool tokens][model tokens]...; the reward loop scores the final one."""
    resp, mask = [], []
    k = rng.randint(1, 3)
    for t in range(k):
        a = rng.randint(2, 5)
        resp += [rng.randint(3, 119) for _ in range(a)]
        mask += [1] * a
        if t < k - 1:
            b = rng.randint(1, 4)
            resp += [rng.randint(3, 119) for _ in range(b)]
            mask += [0] * b
    extra = {"turn_scores": [], "tool_rewards": [0.1] * (k - 1)}
    if reward is not None:
        extra["reward_extra_info"] = {"acc": reward}  # what the reward loop adds beside the score
    return AgentLoopOutput(
        prompt_ids=[rng.randint(3, 119) for _ in range(rng.randint(3, 7))],
        response_ids=resp,
        response_mask=mask,
        reward_score=reward,
        num_turns=2 * k,
        metrics=AgentLoopMetrics(),
        extra_fields=extra,
    )


def rollout(store, step, seed):
    """One step's agent loops into the TransferQueue: {(uid, session): [output]}; sessions with (p + s) % 3 == 0
    have two outputs, one has three (17 outputs for 12 sessions)."""
    rng = random.Random(seed)
    w = worker()
    sessions = {}
    for p in range(PROMPTS):
        uid = f"s{step}p{p}"
        for s in range(N):
            n_out = 3 if (p, s) == (0, 0) else 2 if (p + s) % 3 == 0 else 1
            outs = [output(rng) for _ in range(n_out - 1)] + [output(rng, reward=rng.choice([0.0, 0.5, 1.0]))]
            sessions[(uid, s)] = [o.model_copy(deep=True) for o in outs]
            asyncio.run(
                w._agent_loop_postprocess(
                    outs,
                    False,
                    uid=uid,
                    session_id=s,
                    global_steps=step,
                    index=p,
                    raw_prompt=[{"role": "user", "content": f"task {p}"}],
                )
            )
    return sessions


def train_step(trainer, store, step, seed, parts=1):
    """_step_once from the replay buffer's sample to the advantage step (for each of `parts` mini-batches)."""
    sessions = rollout(store, step, seed)
    keys = [k for (pid, k) in store.rows if pid == "train"]
    trainer.global_steps = step
    batches = []
    for part in range(parts):
        # the replay buffer samples whole prompt groups
        part_keys = [k for k in keys if int(k.split("_")[0].split("p")[-1]) * parts // PROMPTS == part]
        batch = KVBatchMeta(keys=part_keys, tags=[store.tags[("train", k)] for k in part_keys], partition_id="train")
        batch = upsample_batch_to_divisible_size(batch, MULTIPLE, trainer.tokenizer.eos_token_id)
        assert len(batch) % MULTIPLE == 0 and len(batch) > len(part_keys)  # padding rows are in the batch
        # the actor's log-prob pass, on a GPU: old_log_probs and entropy over each response
        g = torch.Generator().manual_seed(seed)
        lens = [len(store.rows[("train", k)]["responses"]) for k in batch.keys]
        store.kv_batch_put(
            keys=batch.keys,
            partition_id="train",
            fields=TensorDict(
                {
                    "old_log_probs": torch.nested.as_nested_tensor(
                        [-torch.rand(n, generator=g) for n in lens], layout=torch.jagged
                    ),
                    "entropy": torch.nested.as_nested_tensor(
                        [torch.rand(n, generator=g) for n in lens], layout=torch.jagged
                    ),
                },
                batch_size=[len(lens)],
            ),
        )
        batches.append(trainer._compute_advantage(batch, metrics={}))
    trained = {k: store.rows[("train", k)] for k in keys}
    store.kv_clear(
        [k for b in batches for k in b.keys], "train"
    )  # fit's cleanup after the step, the padding rows with it
    assert not store.rows
    return sessions, trained


def credit(server, run_id, step, estimator=None):
    out = {}
    for g in server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"]:
        q = urllib.parse.urlencode({"estimator": estimator} if estimator else {})
        r = server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit?{q}")
        out[r["group"]["uid"]] = r
    return out


def runs(mask):
    out, start = [], None
    for j, m in enumerate(list(mask) + [0]):
        if m and start is None:
            start = j
        elif not m and start is not None:
            out.append((start, j))
            start = None
    return out


def test_two_training_steps_and_a_resume_are_stored_at_the_trainers_global_steps(server, store, tok):
    trainer = make_trainer(tok)
    with turnlens.init(project="client-tests", name="verl-v1", url=server.url, env_id="tools") as run:
        restore = hook_compute_advantage(run)
        hook_compute_advantage(run)  # installed twice
        # v1/utils.py binds ray_trainer.compute_advantage when it is imported: imported after the hook, it holds the wrapper
        v1_utils.compute_advantage = ray_trainer.compute_advantage
        try:
            steps = {1: train_step(trainer, store, 1, seed=1), 2: train_step(trainer, store, 2, seed=2)}
        finally:
            restore()
            v1_utils.compute_advantage = ray_trainer.compute_advantage
    assert PPOTrainer._compute_advantage.__name__ == "_compute_advantage" and not hasattr(
        PPOTrainer._compute_advantage, "_turnlens_orig"
    )
    # the trainer restarts from its global_step_2 checkpoint: fit continues at 3, and so does the resumed run
    trainer = make_trainer(tok)
    with turnlens.init(url=server.url, resume=run.id) as resumed:
        restore = hook_compute_advantage(resumed)
        try:
            steps[3] = train_step(trainer, store, 3, seed=3)
        finally:
            restore()

    stored = server.steps(run.id)["steps"]
    assert sorted(s["step"] for s in stored) == [1, 2, 3]
    for s in stored:
        assert s["trajectories"] == PROMPTS * N and s["groups"] == PROMPTS and s["estimator"] == "grpo"
    for step, (sessions, trained) in steps.items():
        assert sum(len(v) for v in sessions.values()) == 17  # 17 batch rows for 12 sessions
        trs = server.trajectories(run.id, step)
        assert len(trs) == PROMPTS * N
        by_uid = {}
        for tr in trs:
            by_uid.setdefault(tr["uid"], []).append(tr)
        for uid, group in by_uid.items():
            for tr in sorted(group, key=lambda t: t["index"]):
                s = tr["index"]
                outs = sessions[(uid, s)]
                turns = server.get(f"/api/v1/trajectories/{tr['id']}")["turns"]
                want = []  # (output, start, end) of each run of model tokens, in session order
                for i, o in enumerate(outs):
                    want += [(i, a, b) for a, b in runs(o.response_mask)]
                assert len(turns) == len(want)
                for t, (i, a, b) in zip(turns, want):
                    o, row = outs[i], trained[f"{uid}_{s}_{i}"]
                    assert t["tokens"]["ids"] == o.response_ids[a:b]
                    assert t["action"] == tok.decode(o.response_ids[a:b], skip_special_tokens=True) and t["action"]
                    if a == runs(o.response_mask)[0][0]:  # an output's first turn: its prompt, and what verl kept of it
                        assert t["observation"] == tok.decode(o.prompt_ids, skip_special_tokens=True)
                        info = t["info"]
                        assert info["output_index"] == i and info["num_turns"] == o.num_turns
                        if i < len(outs) - 1:  # verl copied the final score onto it; the session is credited once
                            assert t["reward"] == 0.0 and info["output_score"] == pytest.approx(outs[-1].reward_score)
                        else:
                            assert info["reward_extra_info"] == {"acc": o.reward_score}
                    assert t["tokens"]["logprobs"] == pytest.approx(row["old_log_probs"][a:b].tolist(), abs=1e-6)
                    # the advantage the trainer wrote back for this output
                    assert t["advantage"] == pytest.approx(float(row["advantages"][a:b].mean()), abs=1e-6)
                # only the final output's turns carry the session's score
                final = outs[-1].reward_score
                assert sum(t["reward"] for t in turns) == pytest.approx(final)
                assert tr["success"] == (final > 0)
        stored_credit = credit(server, run.id, step)
        recomputed = credit(server, run.id, step, "grpo")
        for uid, r in stored_credit.items():
            assert r["trained"]["estimator"] == "grpo"
            for st, rc in zip(r["advantages"], recomputed[uid]["advantages"]):
                assert rc == pytest.approx(st, rel=1e-5, abs=1e-5)
        assert any(a != 0 for r in stored_credit.values() for v in r["advantages"] for a in v)


def test_mini_batches_of_one_step_are_one_step_and_other_estimators_are_labelled(server, store, tok):
    """parameter_sync_step 2 (separate_async's setting): two advantage steps per training step. RLOO
    credits each output of a session as its own sample, which TurnLens cannot recompute per session."""
    trainer = make_trainer(tok, "rloo")
    trainer.parameter_sync_step = 2
    with turnlens.init(project="client-tests", name="verl-v1-rloo", url=server.url, env_id="tools") as run:
        restore = hook_compute_advantage(run)
        try:
            sessions, _ = train_step(trainer, store, 4, seed=4, parts=2)
        finally:
            restore()
    [s] = server.steps(run.id)["steps"]
    assert s["step"] == 4 and s["trajectories"] == PROMPTS * N and s["groups"] == PROMPTS
    r = next(iter(credit(server, run.id, 4).values()))
    assert r["trained"]["estimator"] == "verl:rloo" and "several agent-loop outputs" in r["trained"]["params"]["note"]
    assert r["trained"]["params"]["trainer"]["turnlens_estimator"] == "rloo"


class Broken:
    """A tokenizer whose decode fails."""

    def decode(self, ids, skip_special_tokens=False):
        raise ValueError("no vocabulary")


def test_a_failure_inside_logging_warns_and_the_trainer_goes_on(server, store, tok):
    trainer = make_trainer(tok)
    with turnlens.init(project="client-tests", name="verl-v1-broken", url=server.url, env_id="tools") as run:
        restore = hook_compute_advantage(run, tokenizer=Broken())
        try:
            with pytest.warns(
                UserWarning, match=r"turnlens: the rollouts of step 1 were not logged \(ValueError: no vocabulary\)"
            ):
                _, trained = train_step(trainer, store, 1, seed=5)
        finally:
            restore()
        assert all("advantages" in row for row in trained.values())  # the advantage step finished
        # log_verl_step and the legacy hook: a batch they cannot read is warned about, not raised
        from verl import DataProto
        from verl.trainer.config import AlgoConfig

        bad = DataProto.from_dict(tensors={"responses": torch.zeros(2, 3, dtype=torch.long)})
        with pytest.warns(UserWarning, match=r"step 7 were not logged \(KeyError: .*uid"):
            log_verl_step(run, bad, step=7)
        restore = hook_compute_advantage(run)
        try:
            bad.batch["response_mask"] = torch.ones(2, 3, dtype=torch.long)
            bad.batch["token_level_rewards"] = torch.zeros(2, 3)
            bad.batch["values"] = torch.zeros(2, 3)
            bad.meta_info["global_steps"] = 8
            with pytest.warns(UserWarning, match=r"step 8 were not logged"):
                out = ray_trainer.compute_advantage(
                    bad, adv_estimator="gae", gamma=1.0, lam=1.0, config=AlgoConfig(adv_estimator="gae")
                )
        finally:
            restore()
        assert "advantages" in out.batch.keys()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert server.steps(run.id)["total"] == 0
