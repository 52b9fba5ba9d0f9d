"""encode_built (rollout steps, orjson where installed) gives the JSON values encode gives, and
falls back to encode for what orjson would write otherwise or not at all."""

import json
import random

import pytest

from turnlens import shapes, transport


def _random_step(rnd: random.Random) -> dict:
    texts = ["", "go north", "Sie sehen ein Schloss ☃", "emoji 🎲 and \"quotes\" \\ / \n\t", "\u0000\u001f"]
    def turn() -> dict:
        t = {"observation": rnd.choice(texts) * rnd.randint(1, 3), "action": rnd.choice(texts),
             "reward": rnd.choice([0, 1, 0.5, -1e-05, 1e300, 123456789.125, 2**53])}
        if rnd.random() < 0.5:
            t["advantage"] = rnd.uniform(-3, 3)
        if rnd.random() < 0.3:
            t["tokenCount"] = rnd.randint(0, 5000)
        if rnd.random() < 0.3:
            t["info"] = {"won": rnd.random() < 0.5, "score": rnd.choice([1, 2.5, None, float("nan")]), "path": [1, "a", None]}
        return t
    groups = {f"task-{g}": [[turn() for _ in range(rnd.randint(1, 4))] for _ in range(rnd.randint(1, 3))] for g in range(rnd.randint(1, 3))}
    return shapes.step_body(rnd.randint(0, 100), groups, "env", "gigpo", {"gamma": 0.95, "omega": 1})


def test_encode_built_gives_the_json_values_encode_gives():
    rnd = random.Random(7)
    for _ in range(300):
        body = _random_step(rnd)
        assert json.loads(transport.encode_built(body)) == json.loads(transport.encode(body))


def test_orjson_is_used_here_so_the_comparison_is_not_vacuous():
    pytest.importorskip("orjson")
    body = {"o": "☃"}
    assert transport.encode_built(body) != transport.encode(body)  # orjson writes UTF-8, json escapes


@pytest.mark.parametrize("value", [2**70, "half \ud800 a pair"])
def test_what_orjson_cannot_write_goes_to_encode(value):
    body = {"step": 1, "info": {"x": value}}
    assert transport.encode_built(body) == transport.encode(body)


def test_without_orjson_it_is_encode(monkeypatch):
    monkeypatch.setattr(transport, "_orjson", None)
    body = _random_step(random.Random(3))
    assert transport.encode_built(body) == transport.encode(body)
