"""The OpenRLHF wrapper against OpenRLHF's own experience maker (openrlhf 0.11.2 from PyPI, installed with
--no-deps from requirements-openrlhf-nodeps.txt) on CPU: OpenRLHF's `Experience` objects, its
`split_rollout_samples` (micro-batch concatenation), length penalties, group baselines, `compute_reward`
and `compute_advantages_and_returns` run as released.

Stubbed, because they need GPUs or Ray: `deepspeed` (imported by openrlhf.models.utils for ZeRO-3 only),
`openrlhf.trainer.ray.launcher` (the Ray actor groups; its package imports vLLM), the model forward passes
of `make_experience` (Ray actor groups: the log-probs and KL it would attach are set here instead), and
the trainer around it (openrlhf.trainer.ppo_trainer imports vLLM and dispatches to Ray GPU actors): a
`Trainer` with OpenRLHF's `train_step(rollout_samples, global_step)` contract calls
`make_experience_batch` and returns `global_step + 1`.
"""

import importlib.machinery
import importlib.util
import json
import sys
import types
import urllib.parse
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip(
    "openrlhf", reason="openrlhf is not installed (scripts/test.sh installs it into a venv with --no-deps)"
)
pytest.importorskip("sympy")
pytest.importorskip("pylatexenc")
pytest.importorskip("ray")

for _name in ("deepspeed", "openrlhf.trainer.ray", "openrlhf.trainer.ray.launcher"):
    if _name not in sys.modules:
        sys.modules[_name] = types.ModuleType(_name)
        # a spec, so transformers' find_spec("deepspeed") works; without package metadata it counts as absent
        sys.modules[_name].__spec__ = importlib.machinery.ModuleSpec(_name, None)
sys.modules["openrlhf.trainer.ray.launcher"].RayActorGroup = object
# openrlhf.models/__init__ imports the model classes (flash-attn kernels); utils.py, which holds
# compute_reward, loads from the real package directory without it.
_models = types.ModuleType("openrlhf.models")
_models.__path__ = [str(importlib.util.find_spec("openrlhf").submodule_search_locations[0]) + "/models"]
sys.modules.setdefault("openrlhf.models", _models)

from openrlhf.trainer.ppo_utils.experience import Experience  # noqa: E402
from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker  # noqa: E402
from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController  # noqa: E402

if getattr(sys.modules.get("deepspeed"), "__file__", None) is None:
    del sys.modules["deepspeed"]  # the stub served openrlhf.models.utils' import only

import turnlens  # noqa: E402
from turnlens.integrations.openrlhf import log_openrlhf  # noqa: E402

# OpenRLHF computes in float32, TurnLens in float64.
TOL = 2e-5
N = 4  # samples per prompt
PROMPTS = ["count the apples", "add two and three"]
VOCAB = {
    w: i
    for i, w in enumerate(
        [
            "<pad>",
            "<eos>",
            "<unk>",
            "count",
            "the",
            "apples",
            "add",
            "two",
            "and",
            "three",
            "look",
            "go",
            "obs",
            "ok",
            "done",
            "five",
            "one",
        ]
    )
}


class Tokenizer:
    pad_token_id = 0

    def encode(self, text):
        return [VOCAB.get(w, 2) for w in text.split()]

    def decode(self, ids, skip_special_tokens=True):
        inv = {v: k for k, v in VOCAB.items()}
        return " ".join(inv[int(i)] for i in ids if not (skip_special_tokens and int(i) < 3))


def ns(**kw):
    return types.SimpleNamespace(**{k: ns(**v) if isinstance(v, dict) else v for k, v in kw.items()})


def args(estimator, clip=(-10, 10), overlong=None, micro=3):
    return ns(
        algo={
            "advantage": {"estimator": estimator, "gamma": 1.0, "lambd": 1.0, "no_std_norm": False},
            "kl": {"use_loss": False, "estimator": "k1"},
        },
        rollout={"n_samples_per_prompt": N, "micro_batch_size": micro, "max_new_tokens": 8},
        train={"dynamic_batch_enable": False},
        reward={
            "clip_range": clip,
            "overlong_buffer_len": overlong,
            "overlong_penalty_factor": 1.0,
            "stop_properly_penalty_coef": None,
        },
        data={"max_len": 64},
        ds={"ring_attn_size": 1, "tensor_parallel_size": 1},
    )


def sample(prompt, k, tok):
    """One agent rollout as samples_generator builds it: prompt, a model turn, an observation, a model turn."""
    turns = [["look", "go"] if k % 2 else ["go"], ["obs", "ok"], ["five"] * (1 + k) + ["done"]]
    ids = tok.encode(prompt)
    ranges = []
    for j, words in enumerate(turns):
        start = len(ids)
        ids += tok.encode(" ".join(words))
        if j != 1:
            ranges.append((start, len(ids)))
    seq = torch.tensor(ids)
    action = torch.zeros_like(seq)
    for s, e in ranges:
        action[s:e] = 1
    action = action[1:]
    reward = float((k * 7 + len(prompt)) % 5) / 2
    return Experience(
        sequences=seq.unsqueeze(0),
        attention_mask=torch.ones(1, len(ids), dtype=torch.long),
        action_mask=action.unsqueeze(0),
        prompts=[prompt],
        labels=[""],
        rewards=torch.tensor([reward]),
        response_length=torch.tensor([int(action.sum())]),
        truncated=torch.tensor([False]),
        total_length=torch.tensor([float(len(ids))]),
        info={"reward": torch.tensor([reward])},
    )


def maker(estimator, kl_coef=0.0, **kw):
    tok = Tokenizer()
    m = RemoteExperienceMaker(None, None, None, None, FixedKLController(kl_coef), ns(args=args(estimator, **kw)), tok)

    def make_experience(samples_list):
        # stands in for the actor/reference forwards on Ray GPU actors: log-probs and the k1 KL
        for s in samples_list:
            logp = -0.1 * torch.arange(1, s.action_mask.shape[1] + 1, dtype=torch.float32).repeat(len(s.sequences), 1)
            s.action_log_probs = logp * s.action_mask
            s.kl = (0.01 * s.action_mask.float()) if kl_coef else torch.zeros_like(logp)
        return samples_list

    m.make_experience = make_experience
    return m


class Trainer:
    """OpenRLHF's train_step contract (BasePPOTrainer.train_step without the Ray PPO update)."""

    def __init__(self, experience_maker):
        self.experience_maker = experience_maker
        self.made = []

    def train_step(self, rollout_samples, global_step):
        self.made.append(self.experience_maker.make_experience_batch(rollout_samples))
        return {}, global_step + 1


def rollouts():
    tok = Tokenizer()
    return [sample(p, k, tok) for p in PROMPTS for k in range(N)]


def credit(server, run_id, step, estimator=None, params=None):
    out = {}
    for g in server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"]:
        q = urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params or {})} if estimator else {})
        r = server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit?{q}")
        out[r["group"]["uid"]] = r
    return out


def openrlhf_rows(experiences):
    """{uid: [(reward, [advantage of each model-token run])]} from OpenRLHF's own output, in sample order."""
    from turnlens.shapes import mask_runs

    rows = {}
    for e in experiences:
        for i, idx in enumerate(e.index):
            runs = mask_runs(e.action_mask[i].tolist())
            rows.setdefault(f"prompt-{idx // N}", []).append(
                (idx, float(e.rewards[i]), [float(e.advantages[i][s:t].mean()) for s, t in runs])
            )
    return {uid: [(r, a) for _, r, a in sorted(v)] for uid, v in rows.items()}


def check(server, run_id, step, experiences, estimator, params):
    stored = credit(server, run_id, step)
    want = openrlhf_rows(experiences)
    assert sorted(stored) == sorted(want) == ["prompt-0", "prompt-1"]
    recomputed = credit(server, run_id, step, estimator, params) if estimator else None
    for uid, rows in want.items():
        assert len(stored[uid]["advantages"]) == N
        for j, (reward, advs) in enumerate(rows):
            assert len(advs) == 2  # two model turns, the observation between them
            assert stored[uid]["advantages"][j] == pytest.approx(advs, abs=TOL)  # stored = OpenRLHF's output
            assert sum(stored[uid]["rewards"][j]) == pytest.approx(reward, abs=1e-6)
            if recomputed is not None:
                assert recomputed[uid]["advantages"][j] == pytest.approx(stored[uid]["advantages"][j], abs=TOL)
    return stored


@pytest.mark.parametrize(
    "name, label, params", [("group_norm", "grpo", {"epsilon": 1e-9}), ("dr_grpo", "drgrpo", {}), ("rloo", "rloo", {})]
)
def test_group_estimators_are_logged_at_the_trainers_steps_and_recompute(server, name, label, params):
    run = turnlens.init(project="openrlhf", name=name, url=server.url)
    trainer = Trainer(maker(name, overlong=3))
    log_openrlhf(run, trainer)
    log_openrlhf(run, trainer)  # installing twice logs once
    step = 4  # a resumed trainer: steps continue from its global_step
    for _ in range(2):
        _, step = trainer.train_step(rollouts(), step)
    run.finish()
    steps = server.steps(run.id)["steps"]
    assert sorted(s["step"] for s in steps) == [5, 6]
    assert all(s["estimator"] == label for s in steps)
    stored = check(server, run.id, 5, trainer.made[0], label, params)
    assert any(a != 0 for r in stored.values() for t in r["advantages"] for a in t)
    # the DAPO overlong penalty changed rewards before the baseline: the stored ones are those OpenRLHF used
    raw = sorted(float(e.rewards[0]) for e in rollouts())
    assert sorted(sum(r) for g in stored.values() for r in g["rewards"]) != pytest.approx(raw)
    traj = sorted(server.trajectories(run.id, 5), key=lambda t: (t["uid"], t["index"]))[1]
    turns = server.get(f"/api/v1/trajectories/{traj['id']}")["turns"]
    assert [t["observation"] for t in turns] == ["count the apples", "obs ok"]
    assert [t["action"] for t in turns] == ["look go", "five five done"]


@pytest.mark.parametrize(
    "name, kl, clip",
    [("group_norm", 0.5, (-10, 10)), ("rloo", 0.0, (-0.5, 0.5)), ("reinforce_baseline", 0.0, None), ("gae", 0.0, None)],
)
def test_kl_in_the_reward_a_binding_clip_and_whitened_estimators_are_labelled_openrlhfs_own(server, name, kl, clip):
    run = turnlens.init(project="openrlhf", name=f"{name}-kl{kl}-clip{clip}", url=server.url)
    m = maker(name, kl_coef=kl, clip=clip)
    if name == "gae":
        m.make_experience = (
            lambda make: lambda s: [setattr(x, "values", 0.1 * x.action_mask.float()) or x for x in make(s)]
        )(m.make_experience)
    log_openrlhf(run, m)
    made = m.make_experience_batch(rollouts())
    run.finish()
    [step] = server.steps(run.id)["steps"]
    assert (step["step"], step["estimator"]) == (1, f"openrlhf:{name}")
    stored = check(server, run.id, 1, made, None, None)  # stored = OpenRLHF's per-turn means
    if name == "reinforce_baseline":
        # why it is not TurnLens's reinforcepp_baseline: OpenRLHF whitens with the biased (N) variance
        ours = credit(server, run.id, 1, "reinforcepp_baseline", {})
        gaps = [
            abs(a - b)
            for uid in stored
            for s, o in zip(stored[uid]["advantages"], ours[uid]["advantages"])
            for a, b in zip(s, o)
        ]
        assert max(gaps) > 1e-3


def test_the_class_hook_logs_every_experience_maker_once(server):
    run = turnlens.init(project="openrlhf", name="hook", url=server.url)
    restore = log_openrlhf(lambda: run)
    try:
        m = maker("rloo")
        log_openrlhf(run, m)  # an instance wrapper over the class hook: still one step a call
        made = m.make_experience_batch(rollouts())
    finally:
        restore()
    run.finish()
    steps = server.steps(run.id)["steps"]
    assert [s["step"] for s in steps] == [1]
    check(server, run.id, 1, made, "rloo", {})
    assert RemoteExperienceMaker.compute_advantages_and_returns.__name__ == "compute_advantages_and_returns"
    assert getattr(RemoteExperienceMaker.compute_advantages_and_returns, "_turnlens_orig", None) is None


def test_a_failing_run_never_stops_training():
    class Broken:
        def log_rollouts(self, *a, **k):
            raise RuntimeError("disk full")

    trainer = Trainer(maker("group_norm"))
    log_openrlhf(Broken(), trainer)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _, step = trainer.train_step(rollouts(), 0)
    assert step == 1 and trainer.made[0][0].advantages is not None
    assert any("OpenRLHF step 1 were not logged (RuntimeError: disk full)" in str(w.message) for w in seen)
