"""turn_body's one-pass copy of plain turns gives what its field-by-field conversion gives."""

import random
from types import MappingProxyType

import pytest

from turnlens import shapes


def test_plain_turns_copied_in_one_pass_match_the_field_by_field_conversion():
    rnd = random.Random(5)
    values = {"observation": ["o", "", 3, None], "action": ["a", 2], "reward": [1.0, 0, True, -2.5, float("inf")],
              "anchor": ["s", None, ("x", 1)], "valid": [True, False, 0], "done": [True, 1], "logprob": [-0.5, None, 1],
              "entropy": [0.1, 2], "advantage": [0.3, float("nan"), 2**60], "agent": [1, 2.0], "tokenCount": [3, 1.5, None],
              "extra": [{"k": 1}]}
    fast = 0
    for _ in range(3000):
        if rnd.random() < 0.5:  # plain values only (each list's first)
            turn = {k: v[0] for k, v in values.items() if k in shapes._AS_IS and rnd.random() < 0.5}
        else:
            turn = {k: rnd.choice(v) for k, v in values.items() if rnd.random() < 0.5}
        if rnd.random() < 0.8:
            turn["reward"] = rnd.choice(values["reward"])
        try:
            want = shapes.turn_body(MappingProxyType(turn), "t")  # not a dict: always field by field
        except shapes.ShapeError as e:
            with pytest.raises(shapes.ShapeError, match=str(e).split(":")[0]):
                shapes.turn_body(turn, "t")
            continue
        got = shapes.turn_body(turn, "t")
        assert got == want and all(type(got[k]) is type(want[k]) for k in want), turn
        assert got is not turn  # a copy: the trainer may change its dict after the call
        fast += all(shapes._AS_IS.get(k) in (type(v), float if type(v) is int else None) for k, v in turn.items())
    assert fast > 500  # the one-pass copy was taken, so the comparison is not vacuous
