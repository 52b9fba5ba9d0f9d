"""TurnLens client: log a multi-turn RL run from your own trainer, W&B-shaped.

    import turnlens
    with turnlens.init(project="sokoban", name="gigpo-7b", config=cfg) as run:
        run.log({"train/reward": 0.3}, step=step)
        run.log_rollouts(step, {"task-0": [[{"observation": "...", "action": "left", "reward": 1.0,
                                             "anchor": "s0", "advantage": 0.7}]]})
"""

from typing import Any, Mapping, Optional

from .api import Api
from .run import Run
from .shapes import ShapeError
from .sync import sync
from .transport import ApiError, Unavailable

__all__ = ["init", "Api", "Run", "sync", "ApiError", "ShapeError", "Unavailable"]
__version__ = "0.1.0"


def init(project: str = "default", name: Optional[str] = None, config: Optional[Mapping[str, Any]] = None,
         url: Optional[str] = None, token: Optional[str] = None, resume: Optional[str] = None,
         mode: Optional[str] = None, **kwargs: Any) -> Run:
    """Starts (or with resume=run_id, reopens) a run on a TurnLens server.

    project, name, config: as in W&B; config is stored as given.
    url: the server (default $TURNLENS_URL, else http://127.0.0.1:3000).
    token: the server's API token when it has one (default $TURNLENS_API_TOKEN).
    resume: an existing imported run's id; its write key is read from ~/.turnlens/keys (or pass write_key=).
      Started by a TurnLens worker (a trainer template launched from the dashboard), the process has
      TURNLENS_RUN_ID and TURNLENS_WRITE_KEY set: init() then writes into that run (its status is
      the process's exit code), whatever project and name are passed.
    mode: "online" (default) or "offline" (default $TURNLENS_MODE): offline writes only the spool,
      uploaded later with `turnlens sync DIR`.
    Other keyword arguments (env_id, estimator, tags, notes, seed, write_key, spool_dir, max_queue,
    batch_values, flush_interval, init_timeout, finish_timeout) are Run's.
    """
    return Run(project=project, name=name, config=config, url=url, token=token, resume=resume, mode=mode, **kwargs)
