"""shutdown: answer, then the server loop stops (needs no model)."""

from __future__ import annotations

from ..protocol_types import ShutdownParams, ShutdownResult
from ..state import EngineState


def run(state: EngineState, q: ShutdownParams) -> ShutdownResult:
    state.stop_requested = True
    return ShutdownResult(shutting_down=True)
