"""The protocol's errors: each class is the ``type`` of an error response (PROTOCOL.md, "Errors").

The bottom of the engine's imports: every other module may raise these, this one imports nothing.
"""

from __future__ import annotations


class EngineError(Exception):
    type = "EngineError"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ParseError(EngineError):
    """The line is not a JSON object (bad JSON, bad UTF-8, not an object)."""

    type = "ParseError"


class InvalidRequest(EngineError):
    """The envelope or the params do not match the protocol (names the offending field)."""

    type = "InvalidRequest"


class UnknownCommand(EngineError):
    type = "UnknownCommand"


class NotInitialized(EngineError):
    """A command that needs a model came before init/load."""

    type = "NotInitialized"
