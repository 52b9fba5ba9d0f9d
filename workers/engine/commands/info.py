"""info: versions, device, and the loaded model's shape and settings (needs no model)."""

from __future__ import annotations

from ..protocol import Params
from ..state import EngineState


def run(state: EngineState, p: Params) -> dict:
    p.finish()
    return state.info()
