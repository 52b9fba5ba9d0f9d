"""shutdown: answer, then the server loop stops (needs no model)."""

from __future__ import annotations

from ..protocol import Params
from ..state import EngineState


def run(state: EngineState, p: Params) -> dict:
    p.finish()
    state.stop_requested = True
    return {"shutting_down": True}
