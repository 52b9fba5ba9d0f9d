"""ping: liveness, and whether a model is loaded (needs none)."""

from __future__ import annotations

from ..protocol_types import PROTOCOL_VERSION, PingParams, PingResult
from ..state import EngineState


def run(state: EngineState, q: PingParams) -> PingResult:
    return PingResult(pong=True, initialized=state.backend is not None, protocol_version=PROTOCOL_VERSION)
