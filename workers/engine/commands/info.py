"""info: versions, device, and the loaded model's shape and settings (needs no model)."""

from __future__ import annotations

from ..protocol_types import InfoParams, InfoResult
from ..state import EngineState


def run(state: EngineState, q: InfoParams) -> InfoResult:
    return state.info()
