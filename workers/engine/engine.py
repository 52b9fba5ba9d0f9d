"""The engine as the server loop and in-process callers drive it: an EngineState and the
dispatch of a request to its command, once its params pass the generated protocol schema, as the
command's generated params dataclass (defaults filled in).

Imports flow one way (scripts/check-layers.mjs checks it): server and engine on top, then
commands/, then ppo, scoring, inputs and state, then the model code (backends, model,
sampling, tokenizer, config), then schema, protocol, errors and the generated protocol_types.
"""

from __future__ import annotations

from .commands import COMMANDS
from .errors import UnknownCommand
from .protocol import Params
from .protocol_types import PARAMS
from .schema import validate_params
from .state import EngineState

__all__ = ["Engine"]


class Engine:
    def __init__(self) -> None:
        self.state = EngineState()

    @property
    def stop_requested(self) -> bool:
        return self.state.stop_requested

    def dispatch(self, cmd: str, p: Params) -> dict:
        if cmd not in COMMANDS:
            raise UnknownCommand(f"unknown command {cmd!r} (known: {', '.join(COMMANDS)})")
        validate_params(cmd, p.data)  # the generated schema: types, ranges, choices, unknown fields
        return COMMANDS[cmd](self.state, PARAMS[cmd].from_json(p.data))
