"""`turnlens import KIND PATH`: other tools' files into TurnLens runs (see base.py for how re-imports stay duplicate-free)."""

from . import areal, art, chat, generic, inspect, mlflow, nemo_rl, prime_rl, rllm, slime, tensorboard, trackio, verl, wandb
from .base import ImportReport, Source, run_import

# KIND -> reader(path, env_id) -> [Source]; each reader's docstring's first line is its --help text.
KINDS = {
    "verl": verl.read,
    "verl-file": verl.read_file_logger,  # verl's file logger JSONL (trainer.logger=['file'])
    "tensorboard": tensorboard.read,
    "mlflow": mlflow.read,
    "jsonl": generic.read,
    "trackio": trackio.read,
    "wandb": wandb.read,
    "inspect": inspect.read,
    "chat": chat.read,
    "prime-rl": prime_rl.read,
    "nemo-rl": nemo_rl.read,  # NeMo-RL's train_data_step<N>.jsonl
    "slime": slime.read,  # slime's --save-debug-rollout-data / --save-debug-train-data .pt files
    "art": art.read,  # OpenPipe ART's .art/<project>/models/<model> folders
    "areal": areal.read,  # AReaL's rollout.dump_to_file JSONL
    "rllm": rllm.read,  # rLLM's EpisodeLogger files
    "trl": __import__(__name__ + ".trl", fromlist=["read"]).read,  # TRL completions parquet
    "skyrl": __import__(__name__ + ".skyrl", fromlist=["read"]).read,  # SkyRL's trainer.dump_data_batch pickles
    "agentlightning": __import__(__name__ + ".agentlightning", fromlist=["read"]).read,  # an Agent Lightning store server's URL
}

__all__ = ["KINDS", "ImportReport", "Source", "run_import"]
