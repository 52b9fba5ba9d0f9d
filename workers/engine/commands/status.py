"""ping, info, shutdown: the commands that need no model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol import PROTOCOL_VERSION, Params

if TYPE_CHECKING:
    from ..engine import Engine


def ping(engine: "Engine", p: Params) -> dict:
    p.finish()
    return {"pong": True, "initialized": engine.backend is not None, "protocol_version": PROTOCOL_VERSION}


def shutdown(engine: "Engine", p: Params) -> dict:
    p.finish()
    engine.stop_requested = True
    return {"shutting_down": True}


def info(engine: "Engine", p: Params) -> dict:
    p.finish()
    return engine.info()
