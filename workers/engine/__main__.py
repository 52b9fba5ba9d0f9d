"""Entry point: ``python -m workers.engine`` serves the JSON-lines protocol on stdin/stdout."""

from __future__ import annotations

import os
import sys


def main() -> int:
    # Claim the protocol channel before importing torch and friends: anything they print
    # to fd 1 must land on stderr, never between two responses.
    from .server import protect_stdout

    out = protect_stdout()
    # Nothing may be fetched at run time: models and tokenizers come from local directories.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from .engine import Engine
    from .server import configure_logging, serve

    configure_logging()
    engine = Engine()
    return serve(engine.dispatch, lambda: engine.stop_requested, out=out)


if __name__ == "__main__":
    sys.exit(main())
