"""One module per protocol command, each with ``run(state, params) -> result``: ``params`` is the
command's generated dataclass (``<Cmd>Params`` in protocol_types.py, already checked against the
schema, defaults filled in) and the result is built as its generated TypedDict (``<Cmd>Result``).

COMMANDS maps a request's ``cmd`` to its ``run``, in the order PROTOCOL.md documents them.
Commands import the rooms below them (state, inputs, scoring, ppo, protocol, protocol_types,
schema, errors), never engine.py or each other.
"""

from __future__ import annotations

from . import export_onnx, generate, info, init, load, logprobs, ping, save, shutdown, update

COMMANDS = {
    "ping": ping.run,
    "info": info.run,
    "init": init.run,
    "generate": generate.run,
    "logprobs": logprobs.run,
    "update": update.run,
    "save": save.run,
    "load": load.run,
    "export_onnx": export_onnx.run,
    "shutdown": shutdown.run,
}
