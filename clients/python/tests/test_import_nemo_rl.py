"""NeMo-RL's train_data_step<N>.jsonl. NeMo-RL does not install here (its PyPI package is a 0.0.0
placeholder and the trainer needs CUDA), so its writer was not run: the files are written in the
layout of its code (nemo_rl/algorithms/grpo.py's log_data, Logger.log_batched_dict_as_jsonl: one line
per sample, every value the sample's one-element slice of the batch, plus idx), and the advantages
follow GRPOAdvantageEstimator (calculate_baseline_and_std_per_prompt: baseline per identical prompt
over the batch, optional leave-one-out, std with Bessel's correction, / (std + 1e-6) where std > 0,
float32, expanded to every token). The check is against that layout, not NeMo-RL's own writer."""

import json
import sqlite3
import urllib.parse

import pytest

from turnlens import cli
from turnlens.importers import run_import

torch = pytest.importorskip("torch")


def nemo_advantages(prompts, rewards, leave_one_out, normalize):
    """GRPOAdvantageEstimator.compute_advantage's per-sample value, in float32 as NeMo-RL computes it."""
    P, R = torch.tensor(prompts), torch.tensor(rewards, dtype=torch.float32)
    baseline, std = torch.zeros_like(R), torch.zeros_like(R)
    for u in torch.unique(P, dim=0):
        idx = torch.arange(len(P))[(P == u).all(1)]
        n = len(idx)
        if n <= 1:
            baseline[idx] = R[idx]
            continue
        m = (1 - torch.eye(n)) if leave_one_out else torch.ones(n, n)
        num = torch.tensor(float(n - int(leave_one_out)))  # a tensor, as NeMo-RL's: a group of two divides by 0 -> inf
        b = m @ R[idx] / num
        sq = m @ R[idx].pow(2) / num
        baseline[idx], std[idx] = b, ((sq - b.square()) * (num / (num - 1))).sqrt().nan_to_num(0)
    adv = R - baseline
    if normalize:
        nz = std > 0
        adv[nz] = adv[nz] / (std[nz] + 1e-6)
    return adv.tolist()


def write_step(path, samples, leave_one_out=True, normalize=True):
    """samples: (prompt ids, [(trained ids, env ids)], content, reward). Rows padded to one length, as the batch is."""
    rows = []
    for prompt, parts, content, reward in samples:
        ids, mask = list(prompt), [0] * len(prompt)
        for model, env in parts:
            ids += model + env
            mask += [1] * len(model) + [0] * len(env)
        rows.append((prompt, ids, mask, content, reward))
    width = max(len(r[1]) for r in rows) + 3
    prompts = [r[0] + [0] * (width - len(r[0])) for r in rows]  # NeMo-RL pads the prompts too before comparing them
    advs = nemo_advantages(prompts, [r[4] for r in rows], leave_one_out, normalize)
    with open(path, "w") as f:
        for i, ((prompt, ids, mask, content, reward), a) in enumerate(zip(rows, advs)):
            pad = width - len(ids)
            gen = [(-0.05 * (j + 1) if m else 0.0) for j, m in enumerate(mask)] + [0.0] * pad
            sample = {
                "content": [content],
                "rewards": [reward],
                "input_lengths": [len(ids)],
                "token_ids": [ids + [0] * pad],
                "token_loss_mask": [mask + [0] * pad],
                "sample_loss_mask": [1.0],
                "advantages": [[a] * width],
                "generation_logprobs": [gen],
                "prev_logprobs": [[x - 0.01 for x in gen]],
            }
            f.write(json.dumps({**sample, "idx": i}, default=str) + "\n")
    return advs


def credit(server, run_id, step, group_id, estimator=None, params=None):
    q = (
        ""
        if estimator is None
        else "?" + urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)})
    )
    return server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{group_id}/credit{q}")


def test_nemo_rl_train_data(server, tmp_path):
    log = tmp_path / "logs" / "exp_001"
    log.mkdir(parents=True)
    a, b = [1, 2, 3], [4, 5]
    step1 = [
        # prompt a, a two-turn rollout: (reply, environment answer) twice
        (a, [([10, 11], [30]), ([12], [31, 32])], ["sys: play", "go left", "<obs 1>", "go up", "<done>"], 1.0),
        (a, [([13, 14, 15], [33])], ["sys: play", "go down", "<lost>"], 0.0),
        (a, [([16], [34])], ["sys: play", "wait", "<lost>"], 0.0),
        (b, [([20], [40])], ["2+2?", "4", "correct"], 1.0),
        (b, [([21], [41])], ["2+2?", "5", "wrong"], 0.0),
        (
            a,
            [([17, 18], [35])],
            ["sys: play", "go right", "<won>"],
            1.0,
        ),  # the same prompt again, not adjacent: one group
    ]
    advs1 = write_step(log / "train_data_step1.jsonl", step1)  # NeMo-RL's defaults: leave-one-out, normalised
    step2 = [(a, [([10], [30])], ["sys: play", "x", "y"], r) for r in (1.0, 0.0, 0.5)] + [
        (b, [([20], [40])], ["2+2?", "4", "ok"], r) for r in (2.0, 1.0)
    ]
    advs2 = write_step(log / "train_data_step2.jsonl", step2, leave_one_out=False)
    with open(log / "train_data_step2.jsonl", "a") as f:
        f.write(
            json.dumps(
                {
                    "content": [["p", "q"]],
                    "rewards": [0.0],
                    "input_lengths": [2],
                    "token_ids": [[1, 2]],
                    "token_loss_mask": [[0, 0]],
                    "advantages": [[0.0, 0.0]],
                    "idx": 5,
                }
            )
            + "\n"
        )

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
    """NeMo-RL's distillation loop writes train_data_step<N>.jsonl with content and input_lengths only."""
    f = tmp_path / "train_data_step1.jsonl"
    f.write_text(
        "".join(json.dumps({"content": [["q", "a"]], "input_lengths": [5], "idx": i}) + "\n" for i in range(3))
    )
    [rep] = run_import("nemo-rl", str(tmp_path), project="nemo-imports", url=server.url)
    assert rep.imported == 0 and dict(rep.rejected) == {
        "train_data_step1.jsonl": "holds content and input_lengths only (NeMo-RL's distillation writes that): no tokens, "
        "rewards or advantages to import"
    }
