"""ping: liveness, and whether a model is loaded (needs none)."""

from __future__ import annotations

from ..protocol import PROTOCOL_VERSION, Params
from ..state import EngineState


def run(state: EngineState, p: Params) -> dict:
    p.finish()
    return {"pong": True, "initialized": state.backend is not None, "protocol_version": PROTOCOL_VERSION}
