"""TRL: a `transformers.TrainerCallback` that logs the trainer's metrics to a TurnLens run and, for
GRPOTrainer (and RLOOTrainer), every generation batch's completions with the advantages TRL trained on.

    import turnlens
    from turnlens.integrations.trl import TurnLensCallback
    run = turnlens.init(project="gsm8k", name="grpo-qwen", config=training_args.to_dict())
    trainer = GRPOTrainer(model=..., reward_funcs=..., args=training_args, train_dataset=...)
    trainer.add_callback(TurnLensCallback(run, trainer, success_threshold=0.5))
    trainer.train()        # the run is finished when training ends

Metrics: every numeric value TRL logs (loss, reward, rewards/<func>/mean, completions/mean_length,
entropy, clip_ratio/..., kl) at the trainer's global step, under train/ (eval_* under eval/).

Completions: the callback wraps the trainer's `_generate_and_score_completions`, so it sees every
generation batch (not only the one still in `trainer._logs` at a logging step). The batch is stored
at the optimizer step it trains first (global_step + 1 when it is generated: with
`steps_per_generation` > gradient accumulation or `num_iterations` > 1, one batch serves several
steps and is stored once). Groups are by position: TRL's sampler repeats each dataset row
`num_generations` times in a row and normalises within those runs, so two rows with the same
prompt are two groups. Each completion is a trajectory: reward = TRL's weighted sum of the reward
functions (float32, as TRL computes it), the advantage TRL trained with on every turn, the
per-function rewards and `log_extra` columns in the last turn's info. Tool-calling completions
(`tools=` / `environment_factory`) and `rollout_func` completions with an `env_mask` are split into
turns: each run of model tokens is an action, the tool or environment text before it its observation.

Success: `success_threshold` (default 0.0: the weighted reward is above it) or `success=` a function
of {prompt, completion, reward, rewards, advantage, extra} returning True/False/None.

Estimator: per the trainer's args (see `trl_rollouts.estimator_for`): scale_rewards="group" is
TurnLens's `grpo` with epsilon 1e-4 (TRL's), "none" is `drgrpo`; "batch", normalize_then_sum and
batches with unscorable completions are stored as "trl:..." (shown as trained, not recomputable).
"""

import re
import warnings
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Tuple

try:
    from transformers import TrainerCallback
except ImportError as e:  # pragma: no cover - only without transformers
    raise ImportError("turnlens.integrations.trl needs transformers (pip install transformers trl)") from e

from .trl_rollouts import build_groups, estimator_for, text, threshold_rule, turns_from_mask, turns_from_messages

_text = text  # kept for callers of the earlier module


def _key(k: str) -> str:
    prefix = "eval/" if k.startswith("eval_") else "train/"
    k = k[5:] if k.startswith("eval_") else k
    return (prefix + re.sub(r"[^\w/.-]", "_", k, flags=re.ASCII))[:200]


class _SeenColumns(defaultdict):
    """TRL's pending `log_extra` buffer, remembering which columns this batch wrote (TRL extends only those)."""

    def __init__(self, *a: Any) -> None:
        super().__init__(*a)
        self.seen: set = set(self.keys())

    def __missing__(self, key: Any) -> Any:
        self.seen.add(key)
        return super().__missing__(key)


class TurnLensCallback(TrainerCallback):
    """Logs to `run`; pass the trainer (or set `.trainer`) to also log GRPO/RLOO completions."""

    def __init__(self, run: Any, trainer: Any = None, log_completions: bool = True, finish_on_end: bool = True,
                 success_threshold: Optional[float] = 0.0, success: Optional[Callable[[Dict[str, Any]], Optional[bool]]] = None):
        self.run = run
        self.log_completions = log_completions
        self.finish_on_end = finish_on_end
        self.success = success if success is not None else (threshold_rule(success_threshold) if success_threshold is not None else None)
        self._trainer = None
        self._generated: Optional[Tuple[Any, Any, Any]] = None
        self._pending: Optional[Tuple[int, Dict[str, Any], str, Dict[str, Any]]] = None  # the step being collected
        self.trainer = trainer

    @property
    def trainer(self) -> Any:
        return self._trainer

    @trainer.setter
    def trainer(self, trainer: Any) -> None:
        self._trainer = trainer
        if trainer is not None and self.log_completions:
            self._wrap(trainer)

    def _wrap(self, trainer: Any) -> None:
        if getattr(trainer, "_turnlens_wrapped", None) is self or not hasattr(trainer, "_generate_and_score_completions"):
            return
        score, generate = trainer._generate_and_score_completions, getattr(trainer, "_generate", None)
        if hasattr(trainer, "_pending_extra_logs") and not isinstance(trainer._pending_extra_logs, _SeenColumns):
            pending = _SeenColumns(list)
            pending.update(trainer._pending_extra_logs)
            trainer._pending_extra_logs = pending

        def generate_wrapper(prompts: Any) -> Any:
            out = generate(prompts)
            # (prompt_ids, completion_ids, tool_mask, ...): the token ids and the tool/env mask of this process
            self._generated = (out[0], out[1], out[2]) if isinstance(out, tuple) and len(out) >= 3 else None
            return out

        def score_wrapper(inputs: Any) -> Any:
            self._generated = None
            if isinstance(getattr(trainer, "_pending_extra_logs", None), _SeenColumns):
                trainer._pending_extra_logs.seen = set(trainer._pending_extra_logs.keys())
            out = score(inputs)
            try:
                self._on_batch(trainer, len(inputs))
            except Exception as e:  # never stop training for logging, but say what was not logged
                warnings.warn(f"turnlens: the generation batch of step {trainer.state.global_step + 1} was not logged "
                              f"({type(e).__name__}: {e})")
            return out

        trainer._generate_and_score_completions = score_wrapper
        if generate is not None:
            trainer._generate = generate_wrapper
        trainer._turnlens_wrapped = self

    def _on_batch(self, trainer: Any, local_rows: int) -> None:
        if not getattr(trainer.model, "training", True):
            return  # evaluation batches are not training rollouts
        accelerator = getattr(trainer, "accelerator", None)
        if accelerator is not None and not accelerator.is_main_process:
            return
        processes = getattr(accelerator, "num_processes", 1) if accelerator is not None else 1
        step = int(trainer.state.global_step) + 1
        if self._pending is not None and self._pending[0] != step:
            self._flush()
        offset = len(self._pending[1]) if self._pending is not None else 0
        groups, estimator, params = batch_groups(trainer, local_rows * processes, self.success,
                                                 self._generated if processes == 1 else None, first_group=offset)
        if not groups:
            return
        if self._pending is None:
            self._pending = (step, groups, estimator, params)
        else:
            # Several generation batches in one optimizer step (steps_per_generation < gradient accumulation): a
            # step is stored once, so they are sent together (per-group estimators stay exact).
            _, before, est0, par0 = self._pending
            if est0 != estimator and est0.startswith("trl:"):
                estimator, params = est0, par0
            self._pending = (step, {**before, **groups}, estimator, params)

    def _flush(self) -> None:
        if self._pending is not None:
            step, groups, estimator, params = self._pending
            self._pending = None
            try:
                self.run.log_rollouts(step, groups, estimator=estimator, params=params)
            except Exception as e:  # a value the client refuses (it names the field): training goes on
                warnings.warn(f"turnlens: the completions of step {step} were not logged ({type(e).__name__}: {e})")

    def on_train_begin(self, args, state, control, **kwargs):
        if self.log_completions and self._trainer is None and state.is_world_process_zero:
            warnings.warn("turnlens: TurnLensCallback has no trainer, so only metrics are logged; pass "
                          "TurnLensCallback(run, trainer) or set callback.trainer = trainer to log completions")

    def on_step_end(self, args, state, control, **kwargs):
        if self._pending is not None and self._pending[0] <= int(state.global_step):
            self._flush()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        values = {_key(k): float(v) for k, v in logs.items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")}
        if values:
            self.run.log(values, step=int(state.global_step))

    def on_train_end(self, args, state, control, **kwargs):
        self._flush()
        if self.finish_on_end and state.is_world_process_zero:
            self.run.finish()


def trainer_settings(trainer: Any) -> Tuple[str, Dict[str, Any]]:
    """("grpo" | "rloo", the args that decide how TRL computed the advantages)."""
    args = trainer.args
    kind = "rloo" if type(trainer).__name__.startswith("RLOO") else "grpo"
    keys = ["num_generations", "scale_rewards", "multi_objective_aggregation", "loss_type", "beta", "reward_weights",
            "steps_per_generation", "num_iterations", "generation_batch_size"]
    if kind == "rloo":
        keys = ["num_generations", "normalize_advantages", "reward_clip_range", "beta", "reward_weights",
                "steps_per_generation", "num_iterations", "generation_batch_size"]
    settings = {k: getattr(args, k) for k in keys if hasattr(args, k)}
    weights = getattr(trainer, "reward_weights", None)
    if weights is not None and hasattr(weights, "tolist"):
        settings["reward_weights"] = [float(w) for w in weights.tolist()]
    settings["reward_funcs"] = list(getattr(trainer, "reward_func_names", []) or [])
    settings["std_epsilon"] = 1e-4
    return kind, settings


def batch_groups(trainer: Any, rows: Optional[int] = None, success: Optional[Callable] = None,
                 generated: Optional[Tuple[Any, Any, Any]] = None,
                 first_group: int = 0) -> Tuple[Dict[str, List[Dict[str, Any]]], str, Dict[str, Any]]:
    """The last `rows` completions in `trainer._logs` (default: all it holds, the latest generation batch) as
    ({uid: [trajectories]}, estimator, params). `generated`: (prompt_ids, completion_ids, tool_mask) of the batch,
    to split multi-turn completions by their mask and to tell truncated ones."""
    logs = getattr(trainer, "_logs", None)
    if not logs or not logs.get("prompt"):
        return {}, "", {}
    total = len(logs["prompt"])
    rows = total if rows is None else min(rows, total)

    def tail(seq: Any) -> List[Any]:
        seq = list(seq)
        return seq[len(seq) - rows:] if len(seq) >= rows else [None] * (rows - len(seq)) + seq

    prompts, completions, advantages = tail(logs["prompt"]), tail(logs["completion"]), tail(logs.get("advantages") or [])
    names = list(getattr(trainer, "reward_func_names", None) or list((logs.get("rewards") or {}).keys()))
    rewards = {name: tail(logs["rewards"][name]) for name in names if name in (logs.get("rewards") or {})}
    pending = getattr(trainer, "_pending_extra_logs", None)
    seen = pending.seen if isinstance(pending, _SeenColumns) else None
    extras = {name: tail(vals) for name, vals in (logs.get("extra") or {}).items() if seen is None or name in seen}
    kind, settings = trainer_settings(trainer)
    weights = settings.get("reward_weights") or [1.0] * len(rewards)
    num_generations = int(settings.get("num_generations") or 1)

    decode = _decoder(trainer)
    masks: Optional[List[Any]] = None
    truncated: Optional[List[Optional[bool]]] = None
    if generated is not None and generated[1] is not None and len(generated[1]) == rows:
        completion_ids = [list(map(int, ids)) for ids in generated[1]]
        masks = list(generated[2]) if generated[2] is not None else None
        tok = getattr(trainer, "_tokenizer", None) or getattr(trainer, "processing_class", None)
        ends = set(getattr(trainer, "eos_token_ids", None) or []) | {getattr(tok, "pad_token_id", None), getattr(tok, "eos_token_id", None)}
        ends.discard(None)
        truncated = [bool(ids) and ids[-1] not in ends for ids in completion_ids] if ends else None

    def turns(i: int, prompt: str, completion: Any) -> Optional[List[Dict[str, Any]]]:
        if isinstance(completion, list) and any(isinstance(m, dict) and m.get("role") not in ("assistant", None) for m in completion):
            return turns_from_messages(prompt, completion)
        if masks is not None and decode is not None and masks[i] is not None and 0 in list(masks[i]):
            return turns_from_mask(prompt, completion_ids[i], list(masks[i]), decode)
        return None

    groups, unscorable = build_groups(prompts, completions, rewards, weights, advantages, extras, num_generations,
                                      success=success, turns=turns, truncated=truncated, first_group=first_group)
    estimator, params = estimator_for(kind, settings, unscorable)
    return groups, estimator, params


def _decoder(trainer: Any) -> Optional[Callable[[List[int]], str]]:
    tok = getattr(trainer, "_tokenizer", None) or getattr(trainer, "processing_class", None)
    if tok is None or not hasattr(tok, "decode"):
        return None
    return lambda ids: tok.decode(ids, skip_special_tokens=True)
