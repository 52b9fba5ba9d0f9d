"""SkyRL's training-batch dumps (`trainer.dump_data_batch=true`).

SkyRL pickles each step's `TrainingInputBatch` right after `compute_advantages_and_returns` to
`{trainer.export_path}/dumped_data/global_step_<N>_training_input.pkl` (skyrl/train/trainer.py `dump_data`).
The batch is converted as the live callback converts it (integrations/skyrl_rows.py): one trajectory per
row, one turn per run of model tokens, token ids, sampling log-probs and the advantages SkyRL computed. The
trainer pops the rewards, uids and is_last_step before dumping, so: groups are the batch's
`policy_prompt_boundaries` (`prompt-<k>`), every turn's reward is 0, and a step is labelled "skyrl:dump"
(the dump does not name its estimator either); `metadata["metrics"]` (avg_final_rewards,
avg_advantages, ...) are logged as skyrl/<name> at the step. No tokenizer: turns carry token ids, not text.

The pickles are read with an unpickler that builds only SkyRL's batch classes and plain data (a dump is
never run as code); tensors SkyRL stored as numpy bytes need numpy only, bfloat16 ones (stored with
torch.save) need torch.
"""

import io
import os
import pickle
import re
from pathlib import Path
from typing import Any, Dict, List

from .. import shapes
from .base import Source

_FILE = re.compile(r"^global_step_(\d+)_training_input\.pkl$")
_BATCH_MODULE = "skyrl.backends.skyrl_train.training_batch"
_NOTE = ("SkyRL's dumped batch holds no rewards, uids or estimator name (the trainer pops them before dumping): "
         "groups are its policy_prompt_boundaries, turn rewards are 0, advantages are SkyRL's")


class _Batch(dict):
    metadata: Dict[str, Any] = {}


def _tensor(value: Any) -> Any:
    import numpy as np

    if value.get("format") == "torch":
        import torch

        t = torch.load(io.BytesIO(value["data"]), weights_only=True)
        return t.float().numpy() if t.is_floating_point() else t.numpy()
    return np.frombuffer(value["data"], dtype=np.dtype(value["dtype"])).reshape(value["shape"])


def _rebuild(cls: Any, state: Dict[str, Any]) -> _Batch:
    out = _Batch()
    for key, value in state["batch_dict"].items():
        if isinstance(value, dict) and value.get("format") != "tensor_list":
            out[key] = _tensor(value)
        else:
            out[key] = None  # images (a TensorList) and absent fields
    out.metadata = state.get("metadata") or {}
    return out


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == _BATCH_MODULE and name == "_rebuild_tensor_batch":
            return _rebuild
        if module == _BATCH_MODULE and name.endswith("Batch"):
            return _Batch
        if module == "torch" and name == "device":
            return str
        if module in ("numpy.core.multiarray", "numpy._core.multiarray") and name in ("scalar", "_reconstruct"):
            import numpy

            # numpy 2 moved numpy.core to numpy._core (importing the old name warns)
            return getattr(getattr(numpy, "_core", None) or numpy.core, "multiarray").__dict__[name]
        if module == "numpy" and name in ("dtype", "ndarray"):
            import numpy

            return getattr(numpy, name)
        raise pickle.UnpicklingError(f"{module}.{name}: not part of a SkyRL training batch dump, refused")


def load(path: Path) -> _Batch:
    with open(path, "rb") as f:
        batch = _Unpickler(f).load()
    if not isinstance(batch, _Batch):
        raise ValueError(f"expected a SkyRL TrainingInputBatch, got {type(batch).__name__}")
    return batch


def read(path: str, env_id: str = "external") -> List[Source]:
    """SkyRL batch dumps (trainer.dump_data_batch): a folder of global_step_<N>_training_input.pkl"""
    from ..integrations.skyrl_rows import batch_groups

    p = Path(path)
    if p.is_dir() and (p / "dumped_data").is_dir():
        p = p / "dumped_data"
    # a folder: the dumps anywhere under it (an uploaded archive may hold export_path/dumped_data/)
    files = [p] if p.is_file() else [f for f in p.rglob("*.pkl") if _FILE.match(f.name)]
    files.sort(key=lambda f: (int(_FILE.match(f.name).group(1)) if _FILE.match(f.name) else 1 << 62, f.name))
    if not files:
        raise FileNotFoundError(f"{path}: no global_step_<N>_training_input.pkl files (SkyRL writes them to "
                                "{trainer.export_path}/dumped_data with trainer.dump_data_batch=true)")
    src = Source(name=p.parent.name if p.name == "dumped_data" else (p.name if p.is_dir() else p.stem),
                 config={"source": "SkyRL training batch dump"}, key=os.path.abspath(p), env_id=env_id)
    points = []
    for f in files:
        m = _FILE.match(f.name)
        try:
            if m is None:
                raise ValueError("the name is not global_step_<N>_training_input.pkl, so the step is unknown")
            step = int(m.group(1))
            batch = load(f)
            groups, facts = batch_groups(batch)
            body = shapes.step_body(step, groups, env_id, estimator="skyrl:dump", params={"note": _NOTE},
                                    diagnostics={"skyrl": facts})
        except (OSError, ValueError, KeyError, IndexError, pickle.UnpicklingError, EOFError, shapes.ShapeError) as e:
            src.reject(f.name, f"{type(e).__name__}: {e}")
            continue
        src.add_step(body, shapes.count_turns(body), f.name)
        values = {}
        for k, v in (batch.metadata.get("metrics") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                values[shapes.sanitize_key(f"skyrl/{k}")] = float(v)
        if values:
            points.append(shapes.metric_point(values, step))
    src.add_metrics(points, "batch metrics", rows=False)
    return [src]
