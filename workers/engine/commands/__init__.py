"""One module per protocol command; each exposes ``run``-style functions ``(engine, params) -> result``.

COMMANDS maps a request's ``cmd`` to its function, in the order PROTOCOL.md documents them.
"""

from __future__ import annotations

from . import checkpoint, export, generate, init, logprobs, status, update

COMMANDS = {
    "ping": status.ping,
    "info": status.info,
    "init": init.init,
    "generate": generate.generate,
    "logprobs": logprobs.logprobs,
    "update": update.update,
    "save": checkpoint.save,
    "load": checkpoint.load,
    "export_onnx": export.export_onnx,
    "shutdown": status.shutdown,
}
