"""AReaL 1.0.4 (installed with --no-deps, tests/requirements-areal-nodeps.txt): its rollout dump, written by the
workflow executor's own `_dump_trajectory`, imported with `turnlens import areal`; and the hook on
`PPOActor.compute_advantages`, run by AReaL's own PPOActor on CPU. Stood in for: the training engine (an FSDP or
Megatron engine needs GPUs; the actor only asks it for its policy version and tokenizer) and the tokenizer (a
Hugging Face tokenizer needs model files; this one spells token ids as words). The batches are what AReaL's
workflows hand the trainer: one dict per rollout task, its sequences padded by AReaL's concat_padded_tensors, with
per-token loss_mask, logprobs and policy versions (-1 on prompt tokens)."""

import asyncio
import json
import logging
import urllib.parse

import pytest

import turnlens
from turnlens.importers import run_import

torch = pytest.importorskip("torch")
pytest.importorskip("areal")
from areal.api.cli_args import InferenceEngineConfig, NormConfig, PPOActorConfig  # noqa: E402
from areal.infra.workflow_executor import WorkflowExecutor  # noqa: E402
from areal.trainer.ppo.actor import PPOActor  # noqa: E402
from areal.utils.data import concat_padded_tensors  # noqa: E402

from turnlens.integrations.areal import hook_compute_advantages  # noqa: E402

TOL = 1e-6


class WordTokenizer:
    """decode(ids) -> "t<id> t<id> ..."."""

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(f"t{i}" for i in ids)


class Engine:
    """The actor's engine: its policy version (the trainer sets it to global_step) and tokenizer."""

    def __init__(self, version, tokenizer=None):
        self.version, self.tokenizer = version, tokenizer

    def get_version(self):
        return self.version


def task(seqs, prompt_version=-1):
    """One rollout task: seqs of (prompt ids, [(ids, trained, version)...], reward) -> AReaL's padded dict. AReaL's
    workflows give prompt (and tool) tokens version -1."""
    rows = []
    for prompt, parts, reward in seqs:
        ids, mask, vers = list(prompt), [0] * len(prompt), [prompt_version] * len(prompt)
        for part, trained, version in parts:
            ids += part
            mask += [int(trained)] * len(part)
            vers += [version if trained else -1] * len(part)
        n = len(ids)
        rows.append({"input_ids": torch.tensor([ids]), "loss_mask": torch.tensor([mask]), "attention_mask": torch.ones(1, n, dtype=torch.long),
                     "logprobs": torch.tensor([[-0.01 * (i + 1) for i in range(n)]]), "versions": torch.tensor([vers]),
                     "rewards": torch.tensor([float(reward)])})
    return concat_padded_tensors(rows)


def batch():
    """Two tasks of four sequences of different lengths; one multi-turn (a tool's tokens between two replies); the
    second task's sequences generated across two policy versions."""
    a = task([([1, 2, 3], [([10, 11], True, 5)], 1.0), ([1, 2, 3], [([12, 13, 14, 15, 16], True, 5)], 0.0),
              ([1, 2, 3], [([17], True, 5)], 1.0), ([1, 2, 3], [([18, 19, 20], True, 5), ([90, 91], False, 0), ([21], True, 5)], 0.5)])
    b = task([([4, 5], [([30, 31, 32], True, 3)], 0.2), ([4, 5], [([33], True, 4)], 0.9),
              ([4, 5], [([34, 35, 36, 37, 38, 39], True, 4)], 0.0), ([4, 5], [([40, 41], True, 3), ([42], True, 5)], 0.4)])
    return [a, b]


def actor(version=6, tokenizer=None, **cfg):
    base = {"experiment_name": "e", "trial_name": "t", "kl_ctl": 0.0, "adv_norm": None,
            "reward_norm": NormConfig(mean_level="group", std_level="group", group_size=4)}
    return PPOActor(PPOActorConfig(**{**base, **cfg}), Engine(version, tokenizer))


def credit(server, run_id, step, estimator=None, params=None):
    """{task uid: stored credit} of a step; with estimator, recomputed."""
    q = "?" + urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)}) if estimator else ""
    groups = server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"]
    return {g["uid"]: server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit{q}") for g in groups}


def trained_per_sequence(out):
    """{task uid: [each sequence's advantage]}: AReaL's per-token advantages over the trained tokens."""
    res = {}
    for k, d in enumerate(out):
        seqs = []
        for i in range(d["advantages"].shape[0]):
            m = d["loss_mask"][i].bool()
            vals = d["advantages"][i][m]
            seqs.append(vals.tolist())
        res[f"task-{k:04d}"] = seqs
    return res


@pytest.mark.parametrize(("norm", "cfg", "expected", "params"), [
    (NormConfig(mean_level="group", std_level="group", group_size=4), {}, "grpo", {"epsilon": 1e-5}),
    # AReaL's GSM8K scaling and bias (without its adv_norm): the z-score keeps them only through eps
    (NormConfig(mean_level="group", std_level="group", group_size=4), {"reward_scaling": 10.0, "reward_bias": -0.5}, "grpo", {"epsilon": 1e-6}),
    (NormConfig(mean_level="group", std_level=None, group_size=4), {}, "drgrpo", {}),
    (NormConfig(mean_level="group", mean_leave1out=True, std_level=None, group_size=4), {}, "rloo", {}),
])
def test_hook_labels_what_recomputes(server, norm, cfg, expected, params):
    run = turnlens.init(project="areal-tests", name=f"areal-{expected}", url=server.url)
    act = actor(reward_norm=norm, tokenizer=WordTokenizer(), **cfg)
    restore = hook_compute_advantages(run)
    hook_compute_advantages(run)  # installed twice: still logged once
    try:
        out = act.compute_advantages(batch())
    finally:
        restore()
    run.finish()
    [step] = server.steps(run.id)["steps"]
    assert step["step"] == 6 and step["groups"] == 2 and step["trajectories"] == 8 and step["estimator"] == expected
    stored = credit(server, run.id, 6)
    per_seq = trained_per_sequence(out)
    for uid, c in stored.items():
        assert c["trained"]["estimator"] == expected and c["trained"]["params"] == pytest.approx(params, rel=1e-12)
        for turns, tokens in zip(c["advantages"], per_seq[uid]):
            assert max(tokens) - min(tokens) < TOL  # one advantage per sequence under these settings
            assert turns == pytest.approx([tokens[0]] * len(turns), abs=TOL)
        again = credit(server, run.id, 6, expected, c["trained"]["params"])[uid]  # recomputed as trained
        assert [a[0] for a in again["advantages"]] == pytest.approx([a[0] for a in c["advantages"]], abs=TOL)
    multi = next(t for t in credit(server, run.id, 6)["task-0000"]["trajectories"] if t["index"] == 3)
    turns = server.get(f"/api/v1/trajectories/{multi['id']}")["turns"]
    assert [t["action"] for t in turns] == ["t18 t19 t20", "t21"] and turns[1]["observation"] == "t90 t91"
    assert turns[0]["observation"] == "t1 t2 t3" and [t["reward"] for t in turns] == [0.0, 0.5]


def test_hook_areal_grpo_with_batch_adv_norm_and_staleness(server):
    """AReaL's GSM8K GRPO settings (examples/math/gsm8k_grpo.yaml): reward scaling 10 and bias -0.5, decoupled loss,
    group reward_norm, then adv_norm over the batch's tokens (token-weighted): no
    TurnLens estimator reproduces that, so the step is "areal:grpo" with the settings; the per-token advantages
    are stored as trained. Staleness = the trainer's version - the sequence's oldest generating version."""
    run = turnlens.init(project="areal-tests", name="areal-gsm8k", url=server.url)
    act = actor(adv_norm=NormConfig(mean_level="batch", std_level="batch"), reward_scaling=10.0, reward_bias=-0.5,
                use_decoupled_loss=True, recompute_logprob=True)
    restore = hook_compute_advantages(run)
    try:
        out = act.compute_advantages(batch())
    finally:
        restore()
    run.finish()
    stored = credit(server, run.id, 6)
    per_seq = trained_per_sequence(out)
    mismatch = 0
    for uid, c in stored.items():
        assert c["trained"]["estimator"] == "areal:grpo"
        assert c["trained"]["params"]["trainer"]["adv_norm"]["mean_level"] == "batch"
        assert "adv_norm" in c["trained"]["params"]["note"]
        assert [a[0] for a in c["advantages"]] == pytest.approx([s[0] for s in per_seq[uid]], abs=TOL)
        grpo = credit(server, run.id, 6, "grpo", {"epsilon": 1e-5})[uid]
        mismatch += any(abs(x[0] - y[0]) > 1e-3 for x, y in zip(grpo["advantages"], c["advantages"]))
    assert mismatch, "token-weighted batch normalisation is not GRPO"
    trs = credit(server, run.id, 6)["task-0001"]["trajectories"]
    infos = {t["index"]: server.get(f"/api/v1/trajectories/{t['id']}")["turns"][0]["info"] for t in trs}
    assert (infos[3]["head_version"], infos[3]["tail_version"], infos[3]["staleness"], infos[3]["version_span"]) == (3, 5, 3, 2)
    assert infos[1]["staleness"] == 2 and infos[0]["staleness"] == 3
    m = server.metrics(run.id)
    assert m["areal/staleness_max"] == {6: 3.0} and m["areal/version_span_max"] == {6: 2.0}
    assert m["areal/staleness_mean"][6] == pytest.approx((1 + 1 + 1 + 1 + 3 + 2 + 2 + 3) / 8)


def test_hook_never_raises_into_the_trainer(server):
    class Broken(WordTokenizer):
        def decode(self, ids, skip_special_tokens=False):
            raise RuntimeError("tokenizer gone")

    run = turnlens.init(project="areal-tests", name="areal-broken", url=server.url)
    hook_compute_advantages(run)
    restore = hook_compute_advantages(run, tokenizer=Broken())  # installed twice: the batch is converted once
    try:
        with pytest.warns(UserWarning, match="rollouts of step 6 were not logged.*tokenizer gone") as caught:
            out = actor().compute_advantages(batch())
    finally:
        restore()
    assert len([w for w in caught if "not logged" in str(w.message)]) == 1
    run.finish()
    assert len(out) == 2 and "advantages" in out[0]
    assert server.steps(run.id)["steps"] == []
    assert getattr(PPOActor.compute_advantages, "_turnlens_orig", None) is None  # restored


def dump(executor, traj, task_id):
    ok, why = asyncio.run(executor._dump_trajectory(traj, task_id, False))
    assert ok, why


def test_import_dump_to_file(server, tmp_path):
    ex = object.__new__(WorkflowExecutor)
    ex.config = InferenceEngineConfig(experiment_name="gsm8k", trial_name="trial0", fileroot=str(tmp_path), dump_to_file=True)
    ex._tokenizer, ex.logger = WordTokenizer(), logging.getLogger("areal-test")
    tasks = batch()
    dump(ex, tasks[0], 0)
    dump(ex, tasks[1], 1)
    # a workflow that versions its prompt tokens too (equal lengths: AReaL's padding would add version 0)
    t2 = task([([7], [([50, 51], True, 6)], 1.0), ([7], [([52, 53], True, 5)], 0.0)], prompt_version=5)
    dump(ex, t2, 2)
    [trial] = list((tmp_path / "logs").glob("*/gsm8k/trial0"))
    assert sorted(p.relative_to(trial).as_posix() for p in trial.rglob("*.jsonl")) == ["rollout/5/0.jsonl", "rollout/5/1.jsonl", "rollout/6/2.jsonl"]
    with open(trial / "rollout" / "5" / "1.jsonl", "a") as f:
        f.write('{"task_id": 1, "head_version": 4, "tail_version": 9, "prompt": "p", "completion": "c", "reward": 1}\n')

    [rep] = run_import("areal", str(trial), project="areal-imports", url=server.url)
    assert rep.imported == 10
    assert dict(rep.rejected) == {"5/1.jsonl:5": "tail_version: 9 in the folder of version 5"}
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert sorted(steps) == [5, 6] and steps[5]["groups"] == 2 and steps[5]["trajectories"] == 8 and steps[6]["trajectories"] == 2
    trs = server.trajectories(rep.run_id, 5)
    first = {}
    for t in trs:
        full = server.get(f"/api/v1/trajectories/{t['id']}")
        first[(t["uid"], full["turns"][0]["info"]["sample_idx"])] = full["turns"]
    [turn] = first[("task-1", 3)]
    assert turn["observation"] == "t4 t5" and turn["action"] == "t40 t41 t42" and turn["reward"] == pytest.approx(0.4)
    # AReaL dumps the task's versions (min and max over all its sequences' tokens): the prompt's -1 is the head
    assert (turn["info"]["head_version"], turn["info"]["tail_version"]) == (-1, 5) and "version_span" not in turn["info"]
    [late] = [t for t in server.trajectories(rep.run_id, 6) if t["uid"] == "task-2"][:1]
    info = server.get(f"/api/v1/trajectories/{late['id']}")["turns"][0]["info"]
    assert (info["head_version"], info["tail_version"], info["version_span"]) == (5, 6, 1)
    # a multi-turn sequence: AReaL splits the dump at seqlen - (trained tokens), so the tool's tokens fall in the completion
    [multi] = first[("task-0", 3)]
    assert multi["observation"] == "t1 t2 t3 t18 t19" and multi["action"] == "t20 t90 t91 t21"
    m = server.metrics(rep.run_id)
    assert m["areal/version_span_max"] == {6: 1.0} and m["areal/head_version_min"] == {6: 5.0}

    [again] = run_import("areal", str(trial), project="areal-imports", url=server.url)
    assert again.run_id == rep.run_id and again.imported == 0
