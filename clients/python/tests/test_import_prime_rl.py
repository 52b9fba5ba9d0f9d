"""prime-rl token exports (trainer.enable_token_export), written by prime-rl's own TokenExporter: prime-rl is not
on PyPI and its trainer needs GPUs, so src/prime_rl/trainer/rl/token_export.py (and loss.py, whose importance
ratio it exports) are copied unchanged into tests/vendor/prime_rl from PrimeIntellect-ai/prime-rl at 559b447 and
imported with its config stack stood in for (tests/vendor_stubs.py). The test hands the exporter what the trainer's
step does: a packed micro batch (sequences back to back, padding at the end), the model's logprobs and entropy
(made up: the sampler's logprobs minus 0.01, and 0.5) and the sequence lengths; mark_stable once the step is
written. Each run of loss-masked tokens is a turn with its per-token ids, logprobs, advantages, entropies; same
prompt tokens = one group; a step without STABLE is reported, not imported; a re-import stores nothing twice."""

import importlib.util
import json
import math

import pytest
from vendor_stubs import VENDOR, import_vendored, stubbed

from turnlens.importers import run_import

torch = pytest.importorskip("torch")
pytest.importorskip("jaxtyping")  # loss.py's annotations


class DefaultLossConfig:
    """prime_rl/configs/trainer.py's DefaultLossConfig (a pydantic model in prime-rl's config package): its DPPO
    mask thresholds at their defaults, which the exporter's is_masked columns use."""

    dppo_mask_low = 0.2
    dppo_mask_high = 0.2


# loss.py's other configs, import_object, and the multi-tenant exporter's logger
STUBS = ["prime_rl.configs", "prime_rl.utils", "prime_rl.utils.utils", "prime_rl.utils.logger"]
ATTRS = {"prime_rl.configs.trainer": {"DefaultLossConfig": DefaultLossConfig}, "beartype": {"beartype": lambda f: f}}
[token_export] = import_vendored(["prime_rl.trainer.rl.token_export"], STUBS, ATTRS)
with stubbed(STUBS, ATTRS):  # prime-rl's exporter before 289562d, under a name of its own
    _spec = importlib.util.spec_from_file_location("prime_rl_multi_tenant_token_export", VENDOR / "prime_rl_multi_tenant" / "token_export.py")
    multi_tenant_export = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(multi_tenant_export)


def exporter(out, rank=0):
    return token_export.TokenExporter(out, rank)


def export(exp, step, seqs, micro_step=0, pad=3, **run):
    """One micro batch through exp.export (a TokenExporter). seqs: (prompt, parts, advantage[, env[, index of a
    NaN logprob]]); parts alternate the model's tokens (loss-masked, with the advantage) and a tool's. run: the
    multi-tenant trainer's run_id and run_step. Returns exp (its mark_stable() writes STABLE)."""
    ids, pos, mask, advs, lps, envs, lengths = [], [], [], [], [], [], []
    for prompt, parts, adv, *rest in seqs:
        env = rest[0] if rest else "sokoban"
        seq, m = list(prompt), [False] * len(prompt)
        for i, part in enumerate(parts):
            seq += part
            m += [i % 2 == 0] * len(part)
        lp = [-0.1 * (i + 1) for i in range(len(seq))]
        if len(rest) > 1:
            lp[rest[1]] = math.nan
        ids += seq
        pos += list(range(len(seq)))
        mask += m
        advs += [adv if x else 0.0 for x in m]
        lps += lp
        envs += [env] * len(seq)
        lengths.append(len(seq))
    ids, pos, mask, advs, lps, envs = ids + [0] * pad, pos + [0] * pad, mask + [False] * pad, advs + [0.0] * pad, lps + [0.0] * pad, envs + [""] * pad
    lengths[-1] += pad  # the packer's padding rides with the last sequence; the exporter trims it
    micro_batch = {"input_ids": torch.tensor([ids]), "position_ids": torch.tensor([pos]), "loss_mask": torch.tensor([mask]),
                   "advantages": torch.tensor([advs]), "inference_logprobs": torch.tensor([lps]), "env_names": envs, **run}
    trainer = torch.tensor([lps]) - 0.01
    model_output = {"logprobs": trainer.nan_to_num(-1.0), "entropy": torch.full_like(trainer, 0.5)}
    exp.export(step, micro_step, micro_batch, model_output, lengths, DefaultLossConfig())
    return exp


def test_prime_rl_token_exports(server, tmp_path):
    out = tmp_path / "outputs"
    root = out / "token_exports"
    export(exporter(out, 0), 3, [([1, 2, 3, 4], [[10, 11, 12]], 1.0), ([1, 2, 3, 4], [[13, 14]], -1.0)]).mark_stable()
    rank1 = export(exporter(out, 1), 3, [([5, 6, 7], [[20, 21], [30], [22, 23]], 0.5, "sokoban", 6)])  # token 22: NaN logprob
    export(rank1, 3, [([9], [[], [1]], 0.0)], micro_step=1)  # no trained token: the exporter leaves the sequence out
    rank1.mark_stable()
    export(exporter(out), 4, [([1], [[2]], 0.0)])  # still being written: no STABLE
    lines = [json.loads(x) for x in (root / "step_3" / "rank_1.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["inference_logprobs"][6] is None and lines[0]["schema_version"] == 1
    assert len(lines[0]["token_ids"]) == 8 and lines[0]["env_name"] == "sokoban"  # the padding trimmed
    assert lines[0]["is_masked"] == [False] * 8 and lines[0]["rl_weights"] == [None] * 8

    [rep] = run_import("prime-rl", str(tmp_path / "outputs"), project="prime-imports", url=server.url)
    assert rep.imported == 3
    assert dict(rep.rejected) == {
        "step_4": "no STABLE marker: the step was still being written (or the run stopped mid-step); import again once it is complete",
    }
    [step] = server.steps(rep.run_id)["steps"]
    assert step["step"] == 3 and step["groups"] == 2 and step["trajectories"] == 3 and step["estimator"] == "prime-rl:token-export"
    trs = server.trajectories(rep.run_id, 3)
    groups = {}
    for t in trs:
        groups.setdefault(t["uid"], []).append(t)
    assert sorted(len(v) for v in groups.values()) == [1, 2]
    turns_by_first = {}
    for t in trs:
        full = server.get(f"/api/v1/trajectories/{t['id']}")
        turns_by_first[full["turns"][0]["tokens"]["ids"][0]] = full["turns"]
    multi = turns_by_first[20]
    assert [t["tokens"]["ids"] for t in multi] == [[20, 21], [22, 23]]  # the tool's token 30 is the second turn's observation
    assert multi[1]["info"]["observationTokenIds"] == [30] and multi[0]["info"]["observationTokenIds"] == [5, 6, 7]
    assert multi[0]["tokens"]["logprobs"] is not None and multi[1]["tokens"]["logprobs"] is None  # null inside: kept in info
    assert multi[1]["info"]["tokens"]["inference_logprobs"][0] is None
    one = turns_by_first[10][0]
    assert one["tokens"]["advantages"] == [1.0, 1.0, 1.0] and one["advantage"] == 1.0 and one["reward"] == 0
    assert one["tokens"]["logprobs"] == [pytest.approx(x, rel=1e-6) for x in (-0.5, -0.6, -0.7)]  # stored as float32
    assert one["info"]["rewardExported"] is False and one["info"]["env_name"] == "sokoban"

    [again] = run_import("prime-rl", str(tmp_path / "outputs"), project="prime-imports", url=server.url)
    assert again.run_id == rep.run_id and (again.imported, again.already) == (0, 3)

    (root / "step_4" / "STABLE").touch()  # the step completed since
    [third] = run_import("prime-rl", str(tmp_path / "outputs"), project="prime-imports", url=server.url)
    assert (third.imported, third.already) == (1, 3) and server.steps(rep.run_id)["total"] == 2


def test_export_step_of_a_run_in_a_multi_run_trainer(tmp_path):
    """prime-rl's multi-tenant trainer (until 289562d; tests/vendor/prime_rl_multi_tenant) wrote export_step and
    run_id on each line and put each run's sequences in <run_id>/token_exports/step_<export_step>, export_step being
    the run's own step and step the trainer's. The folder is matched against export_step (against step, every
    line of such a run was rejected as being in another step's folder)."""
    from turnlens.importers.prime_rl import read

    out = tmp_path / "outputs"
    exp = multi_tenant_export.TokenExporter(out, 0)
    export(exp, 7, [([1, 2], [[3, 4]], 1.0), ([1, 2], [[3, 4]], -1.0)], run_id="run-a", run_step=2)
    exp.mark_stable({"run-a"})
    d = out / "run-a" / "token_exports" / "step_2"
    assert (d / "STABLE").exists()
    [src] = read(str(tmp_path / "outputs" / "run-a"))
    assert src.rejected == []
    [rec] = src.records
    assert rec["body"]["step"] == 2 and rec["rows"] == 2
    turns = [t["turns"][0] for g in rec["body"]["groups"] for t in g["trajectories"]]
    assert [(t["info"]["step"], t["info"]["export_step"], t["info"]["run_id"]) for t in turns] == [(7, 2, "run-a")] * 2
    assert sorted(t["advantage"] for t in turns) == [-1.0, 1.0]

    # a line edited to disagree with its folder (the exporter never writes one)
    bad = dict(json.loads((d / "rank_0.jsonl").read_text().splitlines()[0]), export_step=3)
    (d / "rank_1.jsonl").write_text(json.dumps(bad) + "\n")
    [src] = read(str(tmp_path / "outputs" / "run-a"))
    assert src.rejected == [("step_2/rank_1.jsonl:1", "export_step: 3 in the folder of step 2")]
