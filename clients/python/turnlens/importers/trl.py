"""TRL's completion tables: `GRPOConfig(log_completions=True)` (and RLOOConfig) makes the trainer write
`output_dir/completions/completions_<step:05d>.parquet` at every logging step, holding the latest
generation batch: columns step, prompt, completion, one per reward function, any `log_extra`
columns, advantage.

Each file is one step (its `step`), grouped by position as TRL normalised it (`num_generations`
consecutive rows per group, even when two dataset rows share a prompt). The files do not record
`num_generations`, the reward weights or `scale_rewards`, so:
- reward columns: `$TURNLENS_TRL_REWARD_WEIGHTS` (a JSON object {column: weight}) names them and their
  weights; without it every float column is a reward function with weight 1 (a numeric `log_extra`
  column would be counted too: set the variable);
- num_generations: `$TURNLENS_TRL_NUM_GENERATIONS`, else the largest divisor of the runs of equal
  prompts that reproduces the stored advantages;
- the estimator: the stored advantages are recomputed under each of TRL's modes (scale_rewards group,
  none, batch; normalize_then_sum); the mode that reproduces them labels the step (`grpo` with
  epsilon 1e-4, `drgrpo`, or "trl:..."), else "trl:grpo" with a note.
TRL logs only at logging steps and a batch used for several steps is written again: such a repeat
is reported (rejected) and stored once. Success: the weighted reward is above
`$TURNLENS_TRL_SUCCESS_THRESHOLD` (default 0.0), TurnLensCallback's rule. Requires pyarrow (a TRL
dependency).

The same table logged to Trackio or W&B (`report_to="trackio"` / `"wandb"`) is read by their importers
through `logged_tables`, with the run's config (the trainer's args) giving num_generations and the
reward weights.
"""

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import shapes
from ..integrations.trl_rollouts import (TRL_STD_EPSILON, _num, build_groups, estimator_for, threshold_rule, turns_from_messages,
                                         weighted_reward)
from .base import Source, unsupported

_CORE = ("step", "prompt", "completion", "advantage")
_READS = "TRL's completions_<step>.parquet files (GRPOConfig(log_completions=True) writes them to output_dir/completions)"


def success_rule() -> Any:
    """TurnLensCallback's rule: the weighted reward is above $TURNLENS_TRL_SUCCESS_THRESHOLD (default 0.0, the
    callback's default success_threshold)."""
    v = os.environ.get("TURNLENS_TRL_SUCCESS_THRESHOLD")
    try:
        return threshold_rule(float(v) if v else 0.0)
    except ValueError:
        raise ValueError(f"TURNLENS_TRL_SUCCESS_THRESHOLD: expected a number, got {v!r}") from None


def read(path: str, env_id: str = "external", seen: Optional[Dict[str, Tuple[str, int]]] = None) -> List[Source]:
    """TRL GRPO/RLOO completion tables: output_dir, its completions/ folder, or one completions_<step>.parquet

    seen: the batches stored already (`turnlens watch` reads one file at a time), so a repeat is reported."""
    p = Path(path)
    if p.is_dir() and (p / "completions").is_dir():
        p = p / "completions"
    files = [p] if p.is_file() else sorted(p.glob("completions_*.parquet"), key=lambda f: (_file_step(f) or 0, f.name))
    if not files or (p.is_file() and p.suffix != ".parquet"):
        raise unsupported(path, "trl", _READS)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("the trl importer reads parquet files and needs pyarrow (pip install pyarrow; TRL installs it)") from None
    weights_env = _weights_from_env()
    g_env = _int_env("TURNLENS_TRL_NUM_GENERATIONS")
    name = p.parent.name if p.name == "completions" else (p.parent.parent.name if p.is_file() else p.name)
    src = Source(name=name or "trl", config={"source": "TRL completions parquet"}, key=os.path.abspath(p), env_id=env_id)
    points = []
    seen = {} if seen is None else seen
    for f in files:
        try:
            table = pq.read_table(f)
        except Exception as e:  # a truncated or foreign file: name it, keep the others
            src.reject(f.name, f"not a readable parquet file ({type(e).__name__}: {e})")
            continue
        cols = [c for c in table.column_names if not c.startswith("__index_level_")]
        missing = [c for c in ("prompt", "completion", "advantage") if c not in cols]
        if missing:
            src.reject(f.name, f"{', '.join(missing)}: required column(s) missing (has {', '.join(cols[:12])})")
            continue
        rows = table.to_pylist()
        if not rows:
            continue
        try:
            step = shapes.to_step(rows[0].get("step", _file_step(f)), "step")
        except shapes.ShapeError as e:
            src.reject(f.name, str(e))
            continue
        floats = [c for c in cols if pa.types.is_floating(table.schema.field(c).type)]
        out = table_step(src, f.name, rows, cols, floats, step, weights_env, g_env, seen, env_id)
        if out is not None:
            body, n, means = out
            src.add_step(body, n, f"{f.name} step {step}")
            if means:
                points.append(means)
    if points:
        src.add_metrics(points, "per-step means", rows=False)
    return [src]


def table_step(src: Source, where: str, rows: List[Dict[str, Any]], cols: List[str], floats: List[str], step: int,
               weights_given: Optional[Dict[str, float]], g_given: Optional[int], seen: Dict[str, Tuple[str, int]],
               env_id: str) -> Optional[Tuple[Dict[str, Any], int, Optional[Dict[str, Any]]]]:
    """One TRL completions table (GRPOTrainer.log's: step, prompt, completion, a column per reward function,
    log_extra columns, advantage; from a parquet file, a Trackio table or a W&B table) as (step body,
    trajectories, the step's reward means) or None with the reason rejected on `src` as `where`.
    weights_given: {reward column: weight} (else every float column is a reward with weight 1);
    g_given: num_generations (else inferred); seen: batch digests already stored (a repeat is reported)."""
    if weights_given is not None:
        absent = [k for k in weights_given if k not in cols]
        if absent:
            src.reject(where, f"TURNLENS_TRL_REWARD_WEIGHTS names {', '.join(absent)}, which the table lacks (has {', '.join(cols)})")
            return None
        names, weights = list(weights_given), list(weights_given.values())
    else:
        names = [c for c in cols if c not in _CORE and c in floats]
        weights = [1.0] * len(names)
    extras = [c for c in cols if c not in _CORE and c not in names]
    digest = _digest(rows)
    if digest in seen:
        src.reject(where, f"the same generation batch as {seen[digest][0]} (TRL logs the latest batch at every logging step and "
                          f"when training ends, and one batch serves steps_per_generation x num_iterations steps); stored once, at step {seen[digest][1]}")
        return None
    seen[digest] = (where, step)

    n = len(rows)
    prompts = [r.get("prompt") for r in rows]
    completions = [r.get("completion") for r in rows]
    advantages = [_num(r.get("advantage")) for r in rows]
    rewards = {k: [_num(r.get(k)) for r in rows] for k in names}
    R = [weighted_reward([rewards[k][i] for k in names], weights) for i in range(n)]
    G, mode = _infer(prompts, R, rewards, weights, advantages, g_given)
    bad: Dict[int, str] = {}
    for i, r in enumerate(rows):
        if r.get("prompt") is None or r.get("completion") is None:
            bad[i] = "prompt/completion: required"
        elif advantages[i] is None:
            bad[i] = "advantage: not a number"
    unique = "(TRL's log_unique_prompts=True keeps one row per prompt, so its groups cannot be rebuilt)"
    keys = [json.dumps(x, sort_keys=True, default=str) for x in prompts]
    if n % G:
        src.reject(where, f"{n} rows are not a whole number of groups of num_generations={G}" + (f" {unique}" if len(set(keys)) == n else ""))
        return None
    if G == 1 and n > 1 and g_given is None:  # GRPO needs num_generations >= 2: no prompt repeats, so no groups
        src.reject(where, f"no prompt repeats in its {n} rows {unique}; if each row really is a group, set TURNLENS_TRL_NUM_GENERATIONS=1")
        return None
    mixed = [g for g in range(n // G) if len(set(keys[g * G:g * G + G])) > 1]
    if mixed:  # TRL repeats one prompt num_generations times in a row: a group of several prompts is not its batch
        src.reject(where, f"rows {mixed[0] * G}-{mixed[0] * G + G - 1} hold several prompts, not one prompt's {G} completions {unique}")
        return None
    keep = [g for g in range(n // G) if not any(i in bad for i in range(g * G, (g + 1) * G))]
    for i, why in sorted(bad.items()):
        g = i // G
        src.reject(f"{where}:row {i}", f"{why}; its group (rows {g * G}-{g * G + G - 1}, normalised together by TRL) is not imported")
    if not keep:
        return None
    groups, unscorable = build_groups(prompts, completions, rewards, weights, advantages,
                                      {k: [r.get(k) for r in rows] for k in extras}, G, turns=_turns, success=success_rule())
    uids = list(groups)
    groups = {uids[g]: groups[uids[g]] for g in keep}
    settings: Dict[str, Any] = {"num_generations": G, "reward_funcs": names, "reward_weights": weights,
                                "std_epsilon": TRL_STD_EPSILON, "source": where}
    if mode is None:
        estimator, params = "trl:grpo", {"trainer": settings, "note": (
            "the completions table does not record scale_rewards or the reward weights, and no TRL mode "
            "reproduces its advantages from these reward columns (set TURNLENS_TRL_REWARD_WEIGHTS)")}
    else:
        settings.update(mode)
        settings["inferred"] = "scale_rewards / multi_objective_aggregation: the mode that reproduces the stored advantages"
        estimator, params = estimator_for("grpo", settings, unscorable)
    try:
        body = shapes.step_body(step, groups, env_id, estimator, params)
    except shapes.ShapeError as e:
        src.reject(where, str(e))
        return None
    means = None
    scored = [x for x in R if x is not None]
    if scored:
        values = {"trl/reward_mean": sum(scored) / len(scored)}
        for k in names:
            vs = [x for x in rewards[k] if x is not None]
            if vs:
                values[shapes.sanitize_key(f"trl/rewards/{k}/mean")] = sum(vs) / len(vs)
        means = shapes.metric_point(values, step)
    return body, sum(len(t) for t in groups.values()), means


def global_step(values: Dict[str, Any], step: int) -> int:
    """The step of one logged row: transformers' Trackio and W&B callbacks log the trainer's global step as
    `train/global_step` beside every row (the tracker's own step counts log calls, which TRL's profiling and
    completions logs also advance), so a row carrying it is at that step, as those trackers plot it."""
    gs = values.get("train/global_step")
    if isinstance(gs, (int, float)) and not isinstance(gs, bool) and gs == gs and abs(gs) != float("inf") and float(gs).is_integer() and gs >= 0:
        return int(gs)
    return step


def _digest(rows: List[Dict[str, Any]]) -> str:
    """What tells one generation batch from another: its prompts, completions and advantages."""
    return hashlib.sha256(json.dumps([[r.get("prompt"), r.get("completion"), r.get("advantage")] for r in rows],
                                     default=str, sort_keys=True).encode()).hexdigest()


def is_completions_table(rows: Any) -> bool:
    """Whether logged table rows have GRPOTrainer.log's completions shape (prompt, completion, advantage columns)."""
    return isinstance(rows, list) and bool(rows) and all(isinstance(r, dict) and {"prompt", "completion", "advantage"} <= set(r) for r in rows)


def logged_tables(src: Source, tables: List[Tuple[str, int, List[Dict[str, Any]]]], config: Dict[str, Any],
                  env_id: str) -> Dict[int, Dict[str, Any]]:
    """The completions tables TRL logs to Trackio or W&B (report_to=...: one at every logging step, the last
    again when training ends), each (where, the logged row's step, rows), as {step: step body}. The step is the
    table's own `step` column (the trainer's global step). The run's config (the trainer's args) gives
    num_generations (else $TURNLENS_TRL_NUM_GENERATIONS, else inferred) and reward_weights when it has one per
    reward column (else $TURNLENS_TRL_REWARD_WEIGHTS, else weight 1). See table_step."""
    steps: Dict[int, Dict[str, Any]] = {}
    seen: Dict[str, Tuple[str, int]] = {}
    g = config.get("num_generations")
    g = g if isinstance(g, int) and not isinstance(g, bool) and g >= 1 else _int_env("TURNLENS_TRL_NUM_GENERATIONS")
    env_weights = _weights_from_env()
    for where, logged_step, rows in tables:
        try:
            step = shapes.to_step(rows[0].get("step", logged_step), "step")
        except shapes.ShapeError as e:
            src.reject(where, str(e))
            continue
        cols = list(dict.fromkeys(k for r in rows for k in r))
        floats = [c for c in cols if all(isinstance(r.get(c), float) or r.get(c) is None for r in rows)
                  and any(isinstance(r.get(c), float) for r in rows)]
        weights = env_weights
        if weights is None:
            cw = config.get("reward_weights")
            names = [c for c in cols if c not in _CORE and c in floats]
            if isinstance(cw, list) and len(cw) == len(names) and all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in cw):
                weights = {k: float(w) for k, w in zip(names, cw)}
        if step in steps and _digest(rows) not in seen:
            src.reject(where, f"a second, different completions table at step {step}; the first is stored")
            continue
        made = table_step(src, where, rows, cols, floats, step, weights, g, seen, env_id)
        if made is not None:
            steps[step] = made[0]
    return steps


def _turns(i: int, prompt: str, completion: Any) -> Optional[List[Dict[str, Any]]]:
    """A tool-calling completion (assistant / tool messages) as turns; plain ones stay one turn."""
    if isinstance(completion, list) and any(isinstance(m, dict) and m.get("role") not in ("assistant", None) for m in completion):
        return turns_from_messages(prompt, completion)
    return None


def _file_step(f: Path) -> Optional[int]:
    m = re.search(r"(\d+)", f.stem)
    return int(m.group(1)) if m else None


def _int_env(name: str) -> Optional[int]:
    v = os.environ.get(name)
    if not v:
        return None
    if not v.strip().isdigit() or int(v) < 1:
        raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    return int(v)


def _weights_from_env() -> Optional[Dict[str, float]]:
    v = os.environ.get("TURNLENS_TRL_REWARD_WEIGHTS")
    if not v:
        return None
    try:
        d = json.loads(v)
    except ValueError:
        d = None
    if not isinstance(d, dict) or not d or not all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in d.values()):
        raise ValueError(f'TURNLENS_TRL_REWARD_WEIGHTS: expected a JSON object {{"reward column": weight}}, got {v!r}')
    return {str(k): float(w) for k, w in d.items()}


def _mean_std(xs: Sequence[float]) -> Tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, (math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0)


def _predict(G: int, mode: str, R: List[float], rewards: Dict[str, List[Optional[float]]], weights: List[float]) -> List[float]:
    """TRL's advantages (GRPOTrainer._generate_and_score_completions) for one hypothesis, in float64."""
    n, eps = len(R), TRL_STD_EPSILON
    blocks = [R[g:g + G] for g in range(0, n, G)]
    if mode == "normalize_then_sum":
        total = [0.0] * n
        for k, w in zip(rewards, weights):
            col = [0.0 if x is None else x for x in rewards[k]]
            for g in range(0, n, G):
                m, s = _mean_std(col[g:g + G])
                for i in range(g, g + G):
                    total[i] += w * (col[i] - m) / (s + eps)
        m, s = _mean_std(total)
        return [(x - m) / (s + eps) for x in total]
    _, batch_std = _mean_std(R)
    out = []
    for b in blocks:
        m, s = _mean_std(b)
        for x in b:
            out.append(x - m if mode == "none" else (x - m) / ((s if mode == "group" else batch_std) + eps))
    return out


def _infer(prompts: List[Any], R: List[Optional[float]], rewards: Dict[str, List[Optional[float]]], weights: List[float],
           advantages: List[Optional[float]], g_env: Optional[int]) -> Tuple[int, Optional[Dict[str, str]]]:
    """(num_generations, {scale_rewards, multi_objective_aggregation} or None when no mode reproduces the advantages)."""
    n = len(prompts)
    runs, i = [], 0
    while i < n:
        j = i
        while j < n and json.dumps(prompts[j], sort_keys=True, default=str) == json.dumps(prompts[i], sort_keys=True, default=str):
            j += 1
        runs.append(j - i)
        i = j
    base = runs[0]
    for r in runs[1:]:
        base = math.gcd(base, r)
    candidates = [g_env] if g_env else [d for d in range(base, 1, -1) if base % d == 0] or [base]
    modes = [("group", "sum_then_normalize"), ("none", "sum_then_normalize"), ("batch", "sum_then_normalize"),
             ("group", "normalize_then_sum")]
    for G in candidates:
        if n % G:
            continue
        # groups with an unscorable or unreadable row are left out of the comparison; the batch-wide modes need every row
        whole = [g for g in range(0, n, G) if all(R[i] is not None and advantages[i] is not None for i in range(g, g + G))]
        if not whole:
            continue
        for scale, agg in modes:
            batch_wide = scale == "batch" or agg == "normalize_then_sum"
            if batch_wide and len(whole) * G < n:
                continue
            sub = [i for g in whole for i in range(g, g + G)]
            pred = _predict(G, "normalize_then_sum" if agg == "normalize_then_sum" else scale, [R[i] for i in sub],  # type: ignore[misc]
                            {k: [v[i] for i in sub] for k, v in rewards.items()}, weights)
            if all(abs(p - advantages[i]) <= 1e-4 * (1 + abs(advantages[i])) for p, i in zip(pred, sub)):  # type: ignore[operator,arg-type]
                return G, ({"scale_rewards": scale, "multi_objective_aggregation": agg} if agg == "sum_then_normalize"
                           else {"multi_objective_aggregation": agg})
    return candidates[0], None
