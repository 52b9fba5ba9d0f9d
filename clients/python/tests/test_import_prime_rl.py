"""prime-rl token exports (trainer.enable_token_export): prime-rl is a GPU trainer that does not
install here, so the lines are written in its exporter's schema_version 1 layout (one JSON line per
trained sequence, padding trimmed, STABLE once a step is complete, non-finite values as null).
Each run of loss-masked tokens is a turn with its per-token ids, logprobs, advantages, entropies;
same prompt tokens = one group; a step without STABLE is reported, not imported; a re-import
stores nothing twice."""

import json
import math

import pytest

from turnlens.importers import run_import


def line(step, idx, prompt, parts, adv, env="sokoban"):
    """One exported sequence: prompt tokens, then alternating trained (model) and untrained (tool) parts."""
    ids, mask, advs = list(prompt), [False] * len(prompt), [0.0] * len(prompt)
    for i, part in enumerate(parts):
        trained = i % 2 == 0
        ids += part
        mask += [trained] * len(part)
        advs += [adv if trained else 0.0] * len(part)
    n = len(ids)
    lp = [-0.1 * (i + 1) for i in range(n)]
    tlp = [x - 0.01 for x in lp]
    ratio = [math.exp(b - a) for a, b in zip(lp, tlp)]
    return {"schema_version": 1, "step": step, "rank": 0, "micro_step": 0, "micro_sequence_idx": idx, "export_sequence_idx": idx,
            "env_name": env, "token_ids": ids, "position_ids": list(range(n)), "loss_mask": mask, "advantages": advs,
            "inference_logprobs": lp, "trainer_logprobs": tlp, "entropy": [0.5] * n,
            "mismatch_kl": [r - math.log(r) - 1 for r in ratio], "log_importance_ratio": [math.log(r) for r in ratio],
            "importance_ratio": ratio, "prob_delta": [math.exp(b) - math.exp(a) for a, b in zip(lp, tlp)],
            "is_masked": [False] * n, "is_masked_high": [False] * n, "is_masked_low": [False] * n,
            "rl_weights": [None] * n, "ce_weights": [None] * n, "ref_kl_weights": [None] * n}


def test_prime_rl_token_exports(server, tmp_path):
    root = tmp_path / "outputs" / "token_exports"
    (root / "step_3").mkdir(parents=True)
    rank0 = [line(3, 0, [1, 2, 3, 4], [[10, 11, 12]], 1.0), line(3, 1, [1, 2, 3, 4], [[13, 14]], -1.0)]
    rank1 = [line(3, 0, [5, 6, 7], [[20, 21], [30], [22, 23]], 0.5)]
    rank1[0]["inference_logprobs"][6] = None  # a non-finite value (token 22), exported as null
    bad = dict(line(3, 1, [9], [[1]], 0.0), loss_mask=[False, False])
    (root / "step_3" / "rank_0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rank0))
    (root / "step_3" / "rank_1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rank1 + [bad]))
    (root / "step_3" / "STABLE").touch()
    (root / "step_4").mkdir()
    (root / "step_4" / "rank_0.jsonl").write_text(json.dumps(line(4, 0, [1], [[2]], 0.0)) + "\n")  # still being written

    [rep] = run_import("prime-rl", str(tmp_path / "outputs"), project="prime-imports", url=server.url)
    assert rep.imported == 3
    assert dict(rep.rejected) == {
        "step_3/rank_1.jsonl:2": "loss_mask: no token was trained on",
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
    """prime-rl's exporter (token_export.py TokenExporter._write) also writes export_step and run_id: a trainer
    serving several runs puts each run's sequences in <run_id>/token_exports/step_<export_step>, export_step being
    the run's own step and step the trainer's. The folder is matched against export_step (against step, every
    line of such a run was rejected as being in another step's folder)."""
    from turnlens.importers.prime_rl import read

    d = tmp_path / "outputs" / "run-a" / "token_exports" / "step_2"
    d.mkdir(parents=True)
    rows = [dict(line(7, i, [1, 2], [[3, 4]], adv), export_step=2, run_id="run-a") for i, adv in enumerate((1.0, -1.0))]
    for r in rows:  # the newer exporter's per-token loss channels and rewards ride along in info.tokens
        r["losses"] = [{"rl": {"advantage": a, "mask": m}} for a, m in zip(r["advantages"], r["loss_mask"])]
        r["rewards"] = [None] * len(r["token_ids"])
    (d / "rank_0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "STABLE").touch()
    [src] = read(str(tmp_path / "outputs" / "run-a"))
    assert src.rejected == []
    [rec] = src.records
    assert rec["body"]["step"] == 2 and rec["rows"] == 2
    turns = [t["turns"][0] for g in rec["body"]["groups"] for t in g["trajectories"]]
    assert [(t["info"]["step"], t["info"]["export_step"], t["info"]["run_id"]) for t in turns] == [(7, 2, "run-a")] * 2
    assert sorted(t["advantage"] for t in turns) == [-1.0, 1.0]
    assert turns[0]["info"]["tokens"]["losses"][0]["rl"]["mask"] is True

    bad = dict(rows[0], export_step=3)
    (d / "rank_1.jsonl").write_text(json.dumps(bad) + "\n")
    [src] = read(str(tmp_path / "outputs" / "run-a"))
    assert src.rejected == [("step_2/rank_1.jsonl:1", "export_step: 3 in the folder of step 2")]
