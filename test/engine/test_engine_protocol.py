"""The JSON-lines protocol through a real subprocess: round trip, malformed input, liveness."""

from __future__ import annotations

from conftest import ACTIONS, GRIDS, EngineProcess, tiny_init_params


def test_round_trip_init_generate_update_save_load(engine_proc, tmp_path):
    e = engine_proc
    pong = e.call("ping")
    assert pong["pong"] is True and pong["protocol_version"] == 1

    info = e.call("init", tiny_init_params())
    assert info["device"] == "cpu"  # pinned by tiny_init_params (auto would pick CUDA where there is one)
    assert info["precision"] == "fp32"
    assert info["threads"] == 1
    assert info["num_params"] > 0 and info["vocab_size"] > 4

    gen = e.call("generate", {"prompts": GRIDS[:2], "n": 3, "allowed": ACTIONS, "max_new_tokens": 4})
    assert len(gen["responses"]) == 6
    assert [r["prompt_index"] for r in gen["responses"]] == [0, 0, 0, 1, 1, 1]
    for r in gen["responses"]:
        assert r["text"] in ACTIONS and r["finish_reason"] == "allowed"
        assert len(r["logprobs"]) == len(r["response_ids"]) == 1

    samples = [
        {
            "prompt_ids": r["prompt_ids"],
            "response_ids": r["response_ids"],
            "old_logprobs": r["logprobs"],
            "advantages": 1.0 if i % 2 else -1.0,
        }
        for i, r in enumerate(gen["responses"])
    ]
    upd = e.call("update", {"samples": samples, "epochs": 2, "minibatch_size": 4, "allowed": ACTIONS})
    m = upd["metrics"]
    for key in (
        "losses/loss",
        "losses/pg_loss",
        "losses/entropy",
        "losses/clip_frac",
        "losses/grad_norm",
        "losses/approx_kl",
        "perf/num_tokens",
    ):
        assert key in m
    assert m["perf/num_tokens"] == 6 and m["perf/optimizer_steps"] == 4  # 2 epochs x ceil(6 / 4)
    assert upd["update_steps"] == 4

    ck = tmp_path / "ck"
    saved = e.call("save", {"path": str(ck)})
    assert {"engine.json", "model.pt", "optimizer.pt", "tokenizer.json", "rng.pt"} <= set(saved["files"])
    probe = {"prompts": GRIDS, "responses": ["left", "down", "up"]}
    before = e.call("logprobs", probe)
    gen_before = e.call("generate", {"prompts": GRIDS, "max_new_tokens": 5})

    # a second process loads the checkpoint: identical scores and identical sampling
    other = EngineProcess()
    try:
        loaded = other.call("load", {"path": str(ck)})
        assert loaded["update_steps"] == 4
        assert other.call("logprobs", probe) == before
        assert other.call("generate", {"prompts": GRIDS, "max_new_tokens": 5})["responses"] == gen_before["responses"]
    finally:
        other.close()


def test_malformed_lines_get_structured_errors_and_the_process_lives(engine_proc):
    e = engine_proc
    cases = [
        (b"this is not json\n", None, "ParseError"),
        (b"[1, 2, 3]\n", None, "ParseError"),
        (b'{"cmd": "ping"}\n', None, "InvalidRequest"),  # no id
        (b'{"id": true, "cmd": "ping"}\n', None, "InvalidRequest"),
        (b'{"id": 7}\n', 7, "InvalidRequest"),  # no cmd
        (b'{"id": 8, "cmd": "fly"}\n', 8, "UnknownCommand"),
        (b'{"id": 9, "cmd": "ping", "extra": 1}\n', 9, "InvalidRequest"),
        (b'{"id": "s", "cmd": "ping", "params": 5}\n', "s", "InvalidRequest"),
        (b'\xff\xfe{"id": 1}\n', None, "ParseError"),  # not UTF-8
        (b"[" * 100_000 + b"\n", None, "ParseError"),  # deeper than the JSON parser's stack
        (b'{"id": 1, "cmd": "ping"\n', None, "ParseError"),  # truncated object
        (b'{"id": 10, "cmd": "generate", "params": {"prompts": ["x"], "temprature": 1}}\n', 10, None),
        (
            b'{"id": 11, "cmd": "init", "params": {"tiny": {"n_head": 3, "d_model": 32}, '
            b'"tokenizer": {"kind": "word", "corpus": ["a b"]}}}\n',
            11,
            "InvalidRequest",
        ),
        (b'{"id": 12, "cmd": "update", "params": {"samples": "nope"}}\n', 12, None),
        (b'{"id": 13, "cmd": "generate", "params": {"prompts": ["S F"], "top_p": 0}}\n', 13, None),
    ]
    for line, want_id, want_type in cases:
        resp = e.send_raw(line)
        assert resp["ok"] is False, (line, resp)
        assert resp["id"] == want_id, (line, resp)
        assert set(resp["error"]) == {"type", "message"} and resp["error"]["message"]
        if want_type:
            assert resp["error"]["type"] == want_type, (line, resp)
    # a blank line gets no response; the next request is still answered in order
    e.proc.stdin.write(b"\n   \n")
    assert e.call("ping")["pong"] is True


def test_error_messages_name_the_field(engine_proc):
    e = engine_proc
    e.call("init", tiny_init_params())
    r = e.call("generate", {"prompts": ["S F"], "temprature": 1.0}, ok=False)
    assert r["error"]["type"] == "InvalidRequest" and "temprature" in r["error"]["message"]
    r = e.call("generate", {"prompts": ["S F"], "max_new_tokens": "many"}, ok=False)
    assert "params.max_new_tokens" in r["error"]["message"]
    r = e.call("update", {"samples": [{"prompt_ids": [1, 5], "response_ids": [6], "advantages": [1, 2]}]}, ok=False)
    assert "params.samples[0].advantages" in r["error"]["message"]
    r = e.call("generate", {"prompts": ["S F"], "max_new_tokens": 1000}, ok=False)
    assert "context length" in r["error"]["message"]
    assert e.call("ping")["initialized"] is True


def test_chat_messages_to_the_tiny_model_are_an_invalid_request(engine_proc):
    """The tiny tokenizer has no chat template: a message-list prompt is the caller's error,
    named by its field (InvalidRequest), not an internal error."""
    e = engine_proc
    e.call("init", tiny_init_params())
    chat = [[{"role": "user", "content": "left or right?"}]]
    for cmd, params in (("generate", {"prompts": chat}), ("logprobs", {"prompts": chat, "responses": ["left"]})):
        r = e.call(cmd, params, ok=False)
        assert r["error"]["type"] == "InvalidRequest", r
        assert r["error"]["message"].startswith("params.prompts[0]: the tiny model has no chat template"), r
    assert e.call("ping")["initialized"] is True


def test_not_initialized_and_shutdown():
    e = EngineProcess()
    try:
        r = e.call("generate", {"prompts": ["hi"]}, ok=False)
        assert r["error"]["type"] == "NotInitialized"
        assert e.call("info")["initialized"] is False
        assert e.call("shutdown") == {"shutting_down": True}
        assert e.proc.wait(timeout=10) == 0
    finally:
        e.close()


def test_stdout_carries_only_protocol_lines(tmp_path):
    """Libraries that print (exporters, C code) must not corrupt the channel: after
    protect_stdout() both Python prints and raw writes to fd 1 land on stderr."""
    import subprocess
    import sys

    from conftest import REPO

    code = (
        "import os, sys\n"
        "from workers.engine.server import protect_stdout\n"
        "out = protect_stdout()\n"
        "print('python print')\n"
        "os.write(1, b'raw fd write\\n')\n"
        "out.write('{\"id\": 1}\\n'); out.flush()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines() == ['{"id": 1}']
    assert "python print" in proc.stderr.decode() and "raw fd write" in proc.stderr.decode()


def test_requests_are_checked_against_the_generated_schema(engine_proc):
    """protocol.schema.json (generated from the TypeScript zod schemas) rejects a bad request
    before the command runs, naming the field; null still means "absent"."""
    e = engine_proc
    cases = [
        (
            "update",
            {"samples": [{"prompt_ids": [1], "response_ids": [2], "advantages": "high"}]},
            "params.samples[0].advantages: expected a number or an array of a number",
        ),
        (
            "update",
            {"samples": [{"prompt_ids": [1], "response_ids": [2], "advantages": 1, "weight": 2}]},
            "params.samples[0]: unknown field(s) weight",
        ),
        ("update", {"samples": []}, "params.samples: expected at least 1 item(s)"),
        (
            "update",
            {"samples": [{"prompt_ids": [1], "response_ids": [2], "advantages": 1}], "kl_estimator": "k4"},
            'params.kl_estimator: expected one of "k1", "k2", "k3"',
        ),
        ("init", {"optimizer": {"betas": [0.9, 1.5]}}, "params.optimizer.betas[1]: expected a number >= 0 < 1"),
        ("generate", {"prompts": ["S F"], "top_p": 2}, "params.top_p: expected a number > 0 <= 1, got 2"),
        ("export_onnx", {"path": "policy.pt"}, "params.path: expected a string matching"),
        ("save", {}, "params.path: required"),
    ]
    for cmd, params, message in cases:
        r = e.call(cmd, params, ok=False)
        assert r["error"]["type"] == "InvalidRequest", (cmd, r)
        assert r["error"]["message"].startswith(message), (cmd, r["error"]["message"])
    from workers.engine.schema import validate_params

    validate_params("generate", {"prompts": ["S F"], "seed": None, "allowed_per_prompt": [None]})  # null = absent


def test_defaults_come_from_the_generated_types():
    """protocol_types.py is generated from the same zod schemas as protocol.schema.json: its
    dataclasses carry the schema's defaults, and the engine keeps init's and update's params as
    those dataclasses (the loss, the tiny model and a checkpoint's config missing fields take
    their defaults from them)."""
    import dataclasses

    from workers.engine.config import from_checkpoint
    from workers.engine.model import TinyConfig
    from workers.engine.ppo import resolved
    from workers.engine.protocol_types import PARAMS, InitOptimizer, InitParams, InitTiny, UpdateParams
    from workers.engine.schema import protocol_schema

    def schema_defaults(s: dict) -> dict:
        return {k: p["default"] for k, p in s.get("properties", {}).items() if "default" in p}

    def class_defaults(cls) -> dict:
        out = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING and f.default is not None:
                out[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
        return out

    params = protocol_schema()["params"]
    assert set(PARAMS) == set(params)
    for cmd, cls in PARAMS.items():
        assert class_defaults(cls) == schema_defaults(params[cmd]), cmd
    init = params["init"]["properties"]
    assert class_defaults(InitTiny) == schema_defaults(init["tiny"])
    assert class_defaults(InitOptimizer) == schema_defaults(init["optimizer"])

    u = resolved(UpdateParams(samples=[]), init_kl_coef=0.0)
    assert (u.clip_ratio_low, u.clip_ratio_high, u.kl_coef, u.temperature) == (0.2, 0.2, 0.0, 1.0)
    assert resolved(UpdateParams(samples=[], clip_ratio_high=0.28, temperature=0), 0.1).clip_ratio_high == 0.28
    assert resolved(UpdateParams(samples=[], temperature=0), 0.1).temperature == 1.0  # greedy scores at T = 1
    assert resolved(UpdateParams(samples=[]), init_kl_coef=0.1).kl_coef == 0.1
    cfg = from_checkpoint({})  # a checkpoint without the fields: the defaults
    assert (cfg.model, cfg.kl_coef, cfg.seed, cfg.device) == (
        InitParams.model,
        InitParams.kl_coef,
        InitParams.seed,
        InitParams.device,
    )
    assert cfg.optimizer == InitOptimizer() and cfg.tiny == InitTiny() and cfg.tokenizer.kind == "word"
    assert {k: getattr(TinyConfig(), k) for k in schema_defaults(init["tiny"])} == schema_defaults(init["tiny"])


def test_checkpoints_of_the_flat_config_shape_load(engine_proc, tmp_path):
    """Checkpoints whose engine.json "init" has the tokenizer's and optimizer's fields at the top
    level (and the tiny shape with its vocab size) load as init's params: same config, same
    scores and sampling as the checkpoint saved beside them."""
    import json

    from workers.engine.config import from_checkpoint

    e = engine_proc
    e.call("init", tiny_init_params(optimizer={"lr": 0.01, "betas": [0.8, 0.9]}))
    ck = tmp_path / "ck"
    e.call("save", {"path": str(ck)})
    meta = json.loads((ck / "engine.json").read_text())
    cfg = meta["init"]
    assert cfg["tokenizer"] == {"kind": "word", "corpus": None, "path": None, "chat_template": None}
    flat = {k: v for k, v in cfg.items() if k not in ("tokenizer", "optimizer")}
    flat.update(tokenizer_kind="word", tokenizer_path=None, chat_template=None, **cfg["optimizer"])
    flat["tiny"] = {**cfg["tiny"], "vocab_size": e.call("info")["vocab_size"]}
    assert from_checkpoint(flat) == from_checkpoint(cfg)
    old = tmp_path / "old"
    old.mkdir()
    for f in ck.iterdir():
        (old / f.name).write_bytes(f.read_bytes())
    (old / "engine.json").write_text(json.dumps({**meta, "init": flat}))
    probe = {"prompts": GRIDS, "responses": ["left", "down", "up"]}
    answers = []
    for path in (ck, old):
        other = EngineProcess()
        try:
            info = other.call("load", {"path": str(path)})
            gen = other.call("generate", {"prompts": GRIDS, "max_new_tokens": 5, "seed": 1})["responses"]
            answers.append((info["tiny"], info["lr"], info["tokenizer_kind"], other.call("logprobs", probe), gen))
        finally:
            other.close()
    assert answers[0] == answers[1]
    assert answers[0][1] == 0.01


def test_params_arrive_as_the_generated_dataclass_with_defaults():
    """A null or absent field takes its default; numbers become floats where the schema says
    number; nested objects and arrays of objects become their classes."""
    from workers.engine.protocol_types import InitParams, UpdateParams, UpdateSample

    q = UpdateParams.from_json(
        {"samples": [{"prompt_ids": [1], "response_ids": [2], "advantages": 1}], "clip_ratio": 1, "kl_coef": None}
    )
    assert q.samples == [UpdateSample(prompt_ids=[1], response_ids=[2], advantages=1)]
    assert q.clip_ratio == 1.0 and isinstance(q.clip_ratio, float)
    assert (q.kl_coef, q.kl_estimator, q.epochs) == (None, "k3", 1)
    i = InitParams.from_json({"optimizer": {"betas": [0, 0.5]}, "tiny": {"n_layer": 3}})
    assert i.optimizer.betas == (0.0, 0.5) and i.optimizer.lr == 3e-4
    assert (i.tiny.n_layer, i.tiny.d_model) == (3, 64) and i.lora is None


def test_one_list_of_choices_on_both_sides():
    """The KL estimators ppo.py registers are exactly the protocol's kl_estimator choices (one
    list, in workers/engine-client.ts); so are the loss aggregation modes and generate's finish
    reasons."""
    from typing import get_args

    from workers.engine.commands.generate import _REASONS
    from workers.engine.ppo import AGG_MODES, KL_ESTIMATORS
    from workers.engine.protocol_types import GeneratedResponseFinishReason, UpdateKlEstimator, UpdateLossAggMode

    assert sorted(KL_ESTIMATORS) == sorted(get_args(UpdateKlEstimator)) == ["k1", "k2", "k3"]
    assert AGG_MODES == get_args(UpdateLossAggMode)
    assert sorted(_REASONS) == sorted(get_args(GeneratedResponseFinishReason))


def test_checks_the_schema_makes_are_made_once_and_name_the_field(engine_proc):
    """Ranges and choices that commands used to re-check by hand are now the schema's alone: a
    request that breaks one is still an InvalidRequest naming the field, before the command runs.
    The checks across fields that a schema cannot state stay in the commands."""
    e = engine_proc
    cases = [
        ("init", tiny_init_params(tiny={"n_layer": 0}), "params.tiny.n_layer: expected an integer >= 1 <= 24, got 0"),
        ("init", tiny_init_params(device="gpu"), 'params.device: expected one of "auto", "cpu", "cuda", got "gpu"'),
        ("init", tiny_init_params(optimizer={"eps": 0}), "params.optimizer.eps: expected a number > 0, got 0"),
        ("init", tiny_init_params(tokenizer={"kind": "word", "corpus": ["a", 1]}), "params.tokenizer.corpus[1]:"),
        ("load", {"path": "x", "threads": 0}, "params.threads: expected an integer >= 1, got 0"),
    ]
    for cmd, params, message in cases:
        r = e.call(cmd, params, ok=False)
        assert r["error"]["type"] == "InvalidRequest", (cmd, r)
        assert r["error"]["message"].startswith(message), (cmd, r["error"]["message"])
    e.call("init", tiny_init_params())
    one = [{"prompt_ids": [1], "response_ids": [2], "advantages": 1}]
    cases = [
        ("generate", {"prompts": ["S F"], "stop": [""]}, "params.stop[0]: expected a non-empty string"),
        ("generate", {"prompt_ids": [[]]}, "params.prompt_ids[0]: expected at least 1 item(s), got 0"),
        ("generate", {"prompts": ["S F"], "allowed": [[]]}, "params.allowed[0]: expected a string or an integer"),
        ("logprobs", {"prompts": ["S F"], "responses": ["up"], "model": "ref"}, "params.model: expected one of"),
        ("update", {"samples": one, "loss_agg_mode": "sum"}, "params.loss_agg_mode: expected one of"),
        ("update", {"samples": [dict(one[0], mask=[2])]}, "params.samples[0].mask[0]: expected 0 or 1, got 2"),
        ("update", {"samples": one, "clip_ratio_low": 1.5}, "params.clip_ratio_low: expected a number >= 0 <= 1"),
        # across fields: still the commands'
        ("init", tiny_init_params(tokenizer={"kind": "hf"}), "params.tokenizer.kind: expected one of"),
        ("init", tiny_init_params(lora={"r": 4}), "params.lora: LoRA applies to Hugging Face models only"),
        ("generate", {"prompts": ["S F"], "prompt_ids": [[1]]}, "params: give exactly one of prompts"),
        ("update", {"samples": [dict(one[0], advantages=[1, 2])]}, "params.samples[0].advantages: expected 1"),
    ]
    for cmd, params, message in cases:
        r = e.call(cmd, params, ok=False)
        assert r["error"]["type"] == "InvalidRequest", (cmd, r)
        assert r["error"]["message"].startswith(message), (cmd, r["error"]["message"])
    # NaN and Infinity are no JSON: refused as the line is read (no range check could catch NaN)
    r = e.send_raw(b'{"id": 20, "cmd": "generate", "params": {"prompts": ["S F"], "temperature": NaN}}\n')
    assert r["error"]["type"] == "ParseError" and "NaN is not a JSON number" in r["error"]["message"], r
    assert e.call("ping")["initialized"] is True


def test_results_match_the_generated_result_schemas(engine_proc, tmp_path):
    """Every command's answer, as the engine builds it through its generated TypedDict, fits the
    result schema generated from the zod schemas the TypeScript client checks it with (extra
    fields included: the client would drop them silently)."""
    from jsonschema import Draft202012Validator

    from workers.engine.schema import protocol_schema

    results = protocol_schema()["results"]
    e = engine_proc

    def check(cmd: str, params: dict | None = None) -> dict:
        out = e.call(cmd, params)
        errors = [f"{list(x.absolute_path)}: {x.message}" for x in Draft202012Validator(results[cmd]).iter_errors(out)]
        assert not errors, (cmd, errors)
        return out

    check("ping")
    check("info")
    check("init", tiny_init_params(kl_coef=0.1))
    gen = check("generate", {"prompts": GRIDS[:2], "n": 2, "allowed": ACTIONS})
    check("logprobs", {"prompts": GRIDS[:2], "responses": ["left", "up"], "model": "reference"})
    samples = [
        {"prompt_ids": r["prompt_ids"], "response_ids": r["response_ids"], "advantages": 1.0} for r in gen["responses"]
    ]
    check("update", {"samples": samples, "allowed": ACTIONS})
    check("save", {"path": str(tmp_path / "ck")})
    check("load", {"path": str(tmp_path / "ck"), "device": "cpu"})
    check("export_onnx", {"path": str(tmp_path / "p.onnx"), "verify": False})
    check("info")


def test_the_fast_first_pass_gives_the_item_by_item_verdict():
    """validate_params checks stand-ins (extremes of numeric arrays, two per group of same-shaped
    samples) first; on random update requests, some broken in one number, the verdict must be
    the one of checking every item."""
    import random

    from jsonschema import Draft202012Validator

    from workers.engine.schema import _compact, _drop_nulls, protocol_schema

    v = Draft202012Validator(protocol_schema()["params"]["update"])
    rng = random.Random(7)
    bad_values = [-1, 1.5, "x", True, 2]
    verdicts = set()
    for _ in range(300):
        samples = []
        for _ in range(rng.randint(1, 12)):
            n = rng.randint(1, 6)
            s = {
                "prompt_ids": [rng.randint(0, 9) for _ in range(rng.randint(1, 5))],
                "response_ids": [rng.randint(0, 9) for _ in range(n)],
                "advantages": rng.choice([rng.uniform(-1, 1), [rng.uniform(-1, 1) for _ in range(n)]]),
            }
            if rng.random() < 0.5:
                s["mask"] = [rng.randint(0, 1) for _ in range(n)]
            samples.append(s)
        if rng.random() < 0.5:  # break one number somewhere
            s = rng.choice(samples)
            key = rng.choice(["prompt_ids", "response_ids"] + (["mask"] if "mask" in s else []))
            s[key][rng.randrange(len(s[key]))] = rng.choice(bad_values)
        req = {"samples": samples, "clip_ratio": rng.choice([0.2, -0.1])}
        full = v.is_valid(_drop_nulls(req))
        assert v.is_valid(_compact(req)) == full, req
        verdicts.add(full)
    assert verdicts == {True, False}
