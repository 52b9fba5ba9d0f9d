"""`turnlens import KIND PATH`: other tools' files into TurnLens runs (see base.py for how re-imports stay duplicate-free)."""

from . import generic, mlflow, tensorboard, verl
from .base import ImportReport, Source, run_import

# KIND -> reader(path, env_id) -> [Source]; each reader's docstring's first line is its --help text.
KINDS = {"verl": verl.read, "tensorboard": tensorboard.read, "mlflow": mlflow.read, "jsonl": generic.read}

__all__ = ["KINDS", "ImportReport", "Source", "run_import"]
