"""`turnlens import agentlightning URL` against Agent Lightning's own store server (`python -m agentlightning.cli.store`,
agentlightning 0.3.0 from requirements-agentlightning-nodeps.txt) on a loopback port, filled through its own client
(LightningStoreClient) the way its verl daemon and runners fill it: resources per training step, each sample enqueued
twice under one data_id, LLM-call spans and a reward span per attempt."""

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import free_port

from turnlens.importers import run_import

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # agentlightning imports litellm, which fetches a price list
agl = pytest.importorskip("agentlightning")
from agentlightning.store import LightningStoreClient  # noqa: E402
from agentlightning.types import LLM, EnqueueRolloutRequest, Span  # noqa: E402
from agentlightning.utils.otel import flatten_attributes  # noqa: E402


@pytest.fixture
def store_url(tmp_path):
    port = free_port()
    log = open(tmp_path / "store.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "agentlightning.cli.store", "--host", "127.0.0.1", "--port", str(port),
                             "--log-level", "WARNING"], stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/v1/agl/health", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError((tmp_path / "store.log").read_text()[-2000:])
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


def llm_span(rollout_id, attempt_id, seq, prompt, answer, tool_calls=None):
    completion = {"role": "assistant", "content": answer}
    if tool_calls:
        completion["tool_calls"] = tool_calls
    attrs = flatten_attributes({"gen_ai": {"prompt": prompt, "completion": [completion]}})
    attrs["prompt_token_ids"] = list(range(3 * len(prompt)))
    attrs["response_token_ids"] = list(range(len(answer.split())))
    return Span.from_attributes(rollout_id=rollout_id, attempt_id=attempt_id, sequence_id=seq,
                                name="openai.chat.completion", attributes=attrs, start_time=time.time(), end_time=time.time())


def reward_span(rollout_id, attempt_id, seq, value):
    attrs = flatten_attributes({"agentlightning.reward": [{"name": "primary", "value": value}]})  # what emit_reward writes
    return Span.from_attributes(rollout_id=rollout_id, attempt_id=attempt_id, sequence_id=seq,
                                name="agentlightning.annotation", attributes=attrs)


async def fill(url):
    """Two training steps (2 samples x 2 rollouts, then 1 x 2) and a validation rollout; per rollout two LLM calls (the
    second's prompt holds the first exchange and a tool reply) and a reward. Returns what was written, by rollout id."""
    client = LightningStoreClient(url)
    written = {}
    try:
        for step, samples in ((1, 2), (2, 1)):
            res = await client.add_resources({"main_llm": LLM(endpoint="http://127.0.0.1:1/v1", model=f"policy-v{step}")})
            if step == 2:  # the daemon's validation pass publishes its own resources
                val = await client.add_resources({"main_llm": LLM(endpoint="http://127.0.0.1:1/v1", model="policy-val")})
                await client.enqueue_many_rollouts([EnqueueRolloutRequest(input={"q": "val"}, mode="val", resources_id=val.resources_id,
                                                                          metadata={"data_id": "v", "is_train": False})])
            reqs = [EnqueueRolloutRequest(input={"q": f"task {step}.{i}"}, mode="train", resources_id=res.resources_id,
                                          metadata={"data_id": f"d{step}{i}", "is_train": True})
                    for i in range(samples) for _ in range(2)]
            await client.enqueue_many_rollouts(reqs)
            while True:
                ro = await client.dequeue_rollout(worker_id="w0")
                if ro is None:
                    break
                rid, aid = ro.rollout_id, ro.attempt.attempt_id
                if ro.mode == "val":
                    await client.add_span(llm_span(rid, aid, 1, [{"role": "user", "content": "val"}], "v"))
                    await client.add_span(reward_span(rid, aid, 2, 1.0))
                    await client.update_attempt(rid, aid, status="succeeded")
                    continue
                n = len(written)
                first = [{"role": "system", "content": "You move in a maze."}, {"role": "user", "content": f"{ro.input['q']} (#{n})"}]
                call = [{"id": f"c{n}", "type": "function", "function": {"name": "look", "arguments": "{}"}}]
                second = first + [{"role": "assistant", "content": ""}, {"role": "tool", "content": f"a wall, {n}"}]
                reward = float(n % 3) / 2
                await client.add_span(llm_span(rid, aid, 1, first, "", tool_calls=call))
                await client.add_span(llm_span(rid, aid, 2, second, f"go south {n}"))
                await client.add_span(reward_span(rid, aid, 3, reward))
                await client.update_attempt(rid, aid, status="succeeded")
                written[rid] = {"step": step, "data_id": ro.metadata["data_id"], "reward": reward, "n": n, "call": call}
        # a rollout still running (picked up by a later import) and one whose runner emitted no reward
        await client.enqueue_rollout(input={"q": "late"}, mode="train", resources_id=res.resources_id, metadata={"data_id": "late"})
        late = await client.dequeue_rollout(worker_id="w0")
        await client.add_span(llm_span(late.rollout_id, late.attempt.attempt_id, 1, [{"role": "user", "content": "late"}], "x"))
        await client.enqueue_rollout(input={"q": "norew"}, mode="train", resources_id=res.resources_id, metadata={"data_id": "nr"})
        nr = await client.dequeue_rollout(worker_id="w0")
        await client.add_span(llm_span(nr.rollout_id, nr.attempt.attempt_id, 1, [{"role": "user", "content": "nr"}], "y"))
        await client.update_attempt(nr.rollout_id, nr.attempt.attempt_id, status="succeeded")
        return written, late, nr.rollout_id
    finally:
        await client.close()


def test_store_rollouts_become_steps_of_groups(server, store_url):
    written, late, no_reward = asyncio.run(fill(store_url))
    assert len(written) == 6

    [rep] = run_import("agentlightning", store_url, project="agl-imports", url=server.url)
    assert rep.imported == 4, rep.as_dict()  # step 2 waits for its running rollout
    assert len(rep.rejected) == 3, rep.rejected
    assert (f"rollout {no_reward}", "no reward span (agentlightning.reward.0.value): the daemon trains on none") in rep.rejected
    assert [why for _, why in rep.rejected if "validation" in why] == ["a val rollout (validation, not a training step): not imported"]
    assert ("step 2", f"1 rollout(s) not finished (e.g. {late.rollout_id}): the step is imported by an "
                      "import after they have (a step is stored once, whole)") in rep.rejected
    assert [(s["step"], s["groups"], s["trajectories"]) for s in server.steps(rep.run_id)["steps"]] == [(1, 2, 4)]

    # the running rollout finishes: a second import adds step 2, step 1 is already present
    async def finish():
        client = LightningStoreClient(store_url)
        try:
            await client.add_span(reward_span(late.rollout_id, late.attempt.attempt_id, 2, 1.0))
            await client.update_attempt(late.rollout_id, late.attempt.attempt_id, status="succeeded")
        finally:
            await client.close()

    asyncio.run(finish())
    [again] = run_import("agentlightning", store_url, project="agl-imports", url=server.url)
    assert (again.run_id, again.imported, again.already) == (rep.run_id, 3, 4), again.as_dict()
    steps = {s["step"]: s for s in server.steps(rep.run_id)["steps"]}
    assert {s: (steps[s]["groups"], steps[s]["trajectories"]) for s in steps} == {1: (2, 4), 2: (2, 3)}

    seen = set()
    for step in (1, 2):
        for t in server.trajectories(rep.run_id, step):
            full = server.get(f"/api/v1/trajectories/{t['id']}")
            turns = full["turns"]
            rid = turns[-1]["info"]["agentlightning"]["rollout_id"]
            if rid == late.rollout_id:
                assert (full["uid"], full["reward"], [x["action"] for x in turns]) == ("late", 1.0, ["x"])
                continue
            w = written[rid]
            seen.add(rid)
            n = w["n"]
            assert (step, full["uid"], full["reward"]) == (w["step"], w["data_id"], w["reward"])
            assert full["success"] is (w["reward"] > 0)
            assert turns[0]["observation"] == f"system: You move in a maze.\n\nuser: task {step}.{w['data_id'][2]} (#{n})"
            assert turns[0]["action"] == json.dumps(w["call"], sort_keys=True)
            assert turns[1]["observation"] == f"tool: a wall, {n}"
            assert turns[1]["action"] == f"go south {n}"
            assert [x["reward"] for x in turns] == [0.0, w["reward"]]
            assert [x["tokenCount"] for x in turns[1:]] == [3] and turns[0].get("tokenCount") in (None, 0)
            assert turns[1]["info"]["promptTokens"] == 12
            spans = turns[-1]["info"]["spans"]
            assert [s["name"] for s in spans] == ["openai.chat.completion", "openai.chat.completion", "agentlightning.annotation"]
            assert spans[2]["attributes"]["agentlightning.reward.0.value"] == w["reward"]
            assert spans[1]["attributes"]["gen_ai.completion.0.content"] == f"go south {n}"
    assert seen == set(written)


def test_not_a_store(server, tmp_path):
    port = free_port()
    with pytest.raises(ValueError, match="no Agent Lightning store answers"):
        run_import("agentlightning", f"http://127.0.0.1:{port}", project="agl-imports", url=server.url)
    with pytest.raises(ValueError, match=r"answered HTTP 404; the agentlightning importer reads the store API of agentlightning 0.3"):
        run_import("agentlightning", server.url, project="agl-imports", url=server.url)  # a web server, not a store
    with pytest.raises(ValueError, match=r"path: the agentlightning importer reads a URL"):
        run_import("agentlightning", str(tmp_path), project="agl-imports", url=server.url)
