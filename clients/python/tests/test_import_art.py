"""OpenPipe ART's model folders, written by ART itself: `art.Model.log` writes the trajectory parquet files
(write_trajectory_groups_parquet) and history.jsonl, as in training. The importer's advantages are
checked against ART's own `tokenize_trajectory_groups` (what LocalBackend trains on), and the labels
against TurnLens's estimators recomputed by the server."""

import asyncio
import json
import os
import urllib.parse

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm (imported by art) fetches a price list otherwise
try:
    from transformers import masking_utils
except ImportError:
    masking_utils = None
_mask_arguments = getattr(masking_utils, "_preprocess_mask_arguments", None)
art = pytest.importorskip("art")
# Importing art patches transformers' mask preprocessing for its own models, with a signature the
# installed transformers no longer calls: every model forward in the other tests of this process
# would then fail. Nothing here runs a model, so transformers gets its own function back.
if _mask_arguments is not None:
    masking_utils._preprocess_mask_arguments = _mask_arguments

from art import Trajectory, TrajectoryGroup  # noqa: E402
from openai.types.chat.chat_completion import Choice  # noqa: E402

from turnlens.importers import KINDS, run_import  # noqa: E402

CALL = [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "capital"}'}}]


def choice(text, tool_calls=None):
    """A sampled completion, as the model's OpenAI client returns it (ART trains on these)."""
    msg = {"role": "assistant", "content": text, **({"tool_calls": tool_calls} if tool_calls else {})}
    return Choice.model_validate({"finish_reason": "stop", "index": 0, "message": msg, "logprobs": None})


def groups(rewards):
    """A three-trajectory group (one with a tool call) and a group of one with a plain (untrained) assistant message."""
    prompt = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "capital of France?"}]
    g1 = TrajectoryGroup([
        Trajectory(messages_and_choices=prompt + [choice(None, CALL), {"role": "tool", "content": "Paris", "tool_call_id": "c1"},
                                                  choice("Paris")], reward=rewards[0], metrics={"tool_calls": 1}),
        Trajectory(messages_and_choices=prompt + [choice("Lyon")], reward=rewards[1]),
        Trajectory(messages_and_choices=prompt + [choice("Paris?")], reward=rewards[2]),
    ], metadata={"task": "france"})
    g2 = TrajectoryGroup([Trajectory(messages_and_choices=[{"role": "user", "content": "2+2"}, {"role": "assistant", "content": "4"},
                                                           {"role": "user", "content": "3+3"}, choice("6")], reward=0.3)])
    return [g1, g2]


def art_advantages(trajectory_groups, scale):
    """ART LocalBackend's advantages of each trajectory (ART's own tokenize_trajectory_groups; a dropped one: 0)."""
    from art.preprocessing.tokenize import tokenize_trajectory_groups
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = ["<pad>", "<unk>", "<eos>", "system", "user", "assistant", "tool", ":"] + [f"w{i}" for i in range(40)]
    tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }} : {{ m['content'] or '' }} {% endfor %}"
    out = []
    for g in trajectory_groups:
        # plain-text copies (same rewards): trainable without logprobs, one result per trajectory ART keeps
        plain = TrajectoryGroup([Trajectory(messages_and_choices=[{"role": "user", "content": "x"}, {"role": "assistant", "content": f"w{i}"}],
                                            reward=t.reward) for i, t in enumerate(g.trajectories)])
        kept = {r.trajectory.messages_and_choices[1]["content"]: r.advantage
                for r in tokenize_trajectory_groups(tokenizer, [plain], allow_training_without_logprobs=True, scale_rewards=scale,
                                                    shuffle_group_trajectories=False)}
        out.append([kept.get(f"w{i}", 0.0) for i in range(len(g.trajectories))])
    return out


def credit(server, run_id, step, estimator=None, params=None):
    q = "?" + urllib.parse.urlencode({"estimator": estimator, "params": json.dumps(params)}) if estimator else ""
    gs = sorted(server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups")["groups"], key=lambda g: g["uid"])
    return {g["uid"]: server.get(f"/api/v1/runs/{run_id}/steps/{step}/groups/{g['id']}/credit{q}") for g in gs}


def test_art_model_folder(server, tmp_path, monkeypatch):
    model = art.Model(name="agent-1", project="geo", base_path=str(tmp_path / ".art"))
    step1, step2 = groups([1.0, 0.0, 0.5]), groups([1.0, 1.0, 0.0])

    async def train():
        await model.log(step1, split="train", step=1)
        await model.log(step2, split="train", step=2)
        await model.log(step1[:1], split="val", step=2)
        await model.log(metrics={"loss": 0.25}, split="train", step=2)

    asyncio.run(train())
    folder = tmp_path / ".art" / "geo" / "models" / "agent-1"
    history = [json.loads(x) for x in (folder / "history.jsonl").read_text().splitlines()]

    reps = run_import("art", str(tmp_path / ".art"), project="art-imports", url=server.url)
    main, val = sorted(reps, key=lambda r: r.source)
    assert main.source.endswith("agent-1") and val.source.endswith("trajectories/val")
    assert main.rejected == [] and val.rejected == []
    # each log call's line repeats data/* and time/wall_clock_sec, whatever its split: the later line's value is kept
    assert main.replaced and all(w.startswith("history.jsonl:") and (" data/" in w or " time/" in w) for w, _ in main.replaced)

    # curves: history.jsonl's numbers at its steps, the later line winning per key and step
    expected = {}
    for row in history:
        for k, v in row.items():
            if k not in ("step", "recorded_at", "training_step"):
                expected.setdefault(k, {})[row["step"]] = v
    assert server.metrics(main.run_id) == {k: pytest.approx(v) for k, v in expected.items()}
    assert expected["train/loss"] == {2: 0.25} and expected["train/reward"][1] == pytest.approx(0.45)

    steps = sorted(server.steps(main.run_id)["steps"], key=lambda s: s["step"])
    assert [(s["step"], s["groups"], s["trajectories"], s["estimator"]) for s in steps] == [(1, 2, 4, "art:grpo"), (2, 2, 4, "art:grpo")]
    for step, written in ((1, step1), (2, step2)):
        stored = credit(server, main.run_id, step)
        assert list(stored) == ["g0", "g1"]
        for uid, want in zip(stored, art_advantages(written, scale=True)):
            assert [a[0] for a in stored[uid]["advantages"]] == pytest.approx(want, rel=1e-6, abs=1e-7)
            assert [t["reward"] for t in stored[uid]["trajectories"]] == [t.reward for t in written[int(uid[1:])].trajectories]
        params = stored["g0"]["trained"]["params"]
        assert params["trainer"] == {"scale_rewards": True, "std": "population", "epsilon": 1e-6, "drop_zero_advantage_trajectories": True}
        # TurnLens's grpo (unbiased std) would not reproduce what ART trained on: hence the art: label
        grpo = credit(server, main.run_id, step, "grpo", {"epsilon": 1e-6})["g0"]
        assert any(abs(a[0] - b[0]) > 1e-3 for a, b in zip(grpo["advantages"], stored["g0"]["advantages"]))

    # turns as ART wrote the messages: the tool call kept, the tool's reply the next observation, trainable flags
    trs = {t["id"]: server.get(f"/api/v1/trajectories/{t['id']}") for t in server.trajectories(main.run_id, 1)}
    tool = next(t for t in trs.values() if len(t["turns"]) == 2 and "search" in t["turns"][0]["action"])
    first, second = tool["turns"]
    assert json.loads(first["action"]) == CALL and first["observation"] == "system: be brief\n\nuser: capital of France?"
    assert second["observation"] == "tool: Paris" and second["action"] == "Paris" and second["reward"] == 1.0
    assert second["info"]["art"]["metrics"] == {"tool_calls": 1} and second["info"]["art"]["groupMetadata"] == {"task": "france"}
    assert first["info"]["trainable"] is True and second["info"]["artTrained"] is True
    few_shot = next(t for t in trs.values() if t["turns"][0]["action"] == "4")
    assert [t["info"]["trainable"] for t in few_shot["turns"]] == [False, True]
    assert few_shot["turns"][-1]["advantage"] == 0 and few_shot["turns"][-1]["info"]["artTrained"] is False  # a group of one
    middle = next(t for t in trs.values() if t["turns"][0]["action"] == "Paris?")
    assert middle["turns"][0]["info"]["artTrained"] is False  # reward 0.5 = the group's mean: ART drops it

    # the val split: its own run, evaluations without advantages or estimator
    [vstep] = server.steps(val.run_id)["steps"]
    assert (vstep["step"], vstep["trajectories"], vstep["estimator"]) == (2, 3, None)

    again = run_import("art", str(tmp_path / ".art"), project="art-imports", url=server.url)
    assert sorted((r.run_id, r.imported) for r in again) == sorted((r.run_id, 0) for r in reps)

    # scale_rewards=False: r - mean, which is TurnLens's drgrpo where every group has two or more trajectories
    monkeypatch.setenv("TURNLENS_ART_SCALE_REWARDS", "false")
    pairs = art.Model(name="agent-2", project="geo", base_path=str(tmp_path / ".art"))
    asyncio.run(pairs.log(groups([1.0, 0.0, 0.25])[:1], split="train", step=1))
    [rep] = run_import("art", str(tmp_path / ".art" / "geo" / "models" / "agent-2"), project="art-imports", url=server.url)
    [s] = server.steps(rep.run_id)["steps"]
    assert s["estimator"] == "drgrpo"
    stored = credit(server, rep.run_id, 1)["g0"]
    [want] = art_advantages(groups([1.0, 0.0, 0.25])[:1], scale=False)
    assert [a[0] for a in stored["advantages"]] == pytest.approx(want, abs=1e-6)
    again = credit(server, rep.run_id, 1, "drgrpo", {})["g0"]
    assert [a[0] for a in again["advantages"]] == pytest.approx([a[0] for a in stored["advantages"]], abs=1e-6)


def test_art_rejects_what_it_cannot_read(tmp_path):
    folder = tmp_path / ".art" / "geo" / "models" / "old" / "trajectories" / "train"
    folder.mkdir(parents=True)
    (folder / "0001.jsonl").write_text("{}\n")  # an older ART's trajectory file
    [src] = KINDS["art"](str(tmp_path / ".art"))
    assert src.rows() == 0 and src.rejected == [("train/0001.jsonl", "an older ART's JSONL trajectory file: convert it with "
                                                 f"`art migrate {folder.parent.parent}` (ART's command), then import again")]
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="the art importer reads an ART model folder"):
        run_import("art", str(tmp_path / "notes.txt"), url="http://127.0.0.1:9")
