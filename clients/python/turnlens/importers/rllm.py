"""rLLM's episode logs (`rllm.episode_logging.log_episodes=true`, or `trainer.log_episodes`): its
`EpisodeLogger` (rllm/utils/episode_logger.py) writes one JSON file per episode,
`{episode_log_dir}/episodes/{mode}_step_{N}_epoch_{E}/episode_hash{task hash}_id{episode id}.json`, and a
`batch_summary.json` per folder. An episode holds training_step, epoch, episode_id (`task_id:rollout`),
task, is_correct, termination_reason, metrics, metadata, timing and its trajectories (name, uid, reward,
steps of observation, thought, action, reward, done, model_response, chat_completions, timing).

One run per mode: `train`, and each other mode (`val`) a run "<name> (<mode>)". A step is a training
step; its groups are rLLM's own (`task_id:trajectory name`, as rllm/trainer/algorithms/transform.py
groups trajectories for advantages), each trajectory with at least one step a TurnLens trajectory:
a turn per rLLM step (observation as text, JSON if structured, else the chat messages since the last
assistant reply; action as text, JSON if structured, else the model's response; the step's reward
and done; thought, model_response and timing in info). The trajectory's reward is its own, else its
last step's (rLLM's fill); success is the episode's is_correct; truncated: terminated by a length,
turn or time limit. The episode's fields go to the last turn's info. The logs hold no advantages
(rLLM computes them after logging), so steps carry no estimator label. A file whose batch_summary
lists an episode file that is missing is reported.
PATH: episode_log_dir, its episodes/ folder, one step folder, or one episode file.
"""

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

from .. import shapes
from .base import MAX_LINE, Source, _mb, unsupported
from .chat import turns_of

_READS = ("rLLM episode logs ({episode_log_dir}/episodes/<mode>_step_<N>_epoch_<E>/episode_hash*_id*.json, "
          "written by EpisodeLogger)")
_STEP_DIR = re.compile(r"^(.+)_step_(\d+)_epoch_(\d+)$")
_EPISODE = re.compile(r"^episode_hash.*_id.*\.json$")
_TRUNCATED = {"max_prompt_length_exceeded", "max_response_length_exceeded", "max_turns_exceeded", "timeout"}
_DEFAULT_TRAJ_NAME = "default_traj_name"  # rllm.types: a trajectory not named by its workflow


def _text(v: Any) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _folders(p: Path) -> List[Tuple[str, int, int, Path, List[Path]]]:
    """(mode, step, epoch, folder, episode files) in step order."""
    if p.is_file():
        m = _STEP_DIR.match(p.parent.name)
        return [(m.group(1), int(m.group(2)), int(m.group(3)), p.parent, [p])] if m and _EPISODE.match(p.name) else []
    if _STEP_DIR.match(p.name):
        dirs = [p]
    else:
        root = p / "episodes" if (p / "episodes").is_dir() else p
        dirs = [d for d in root.iterdir() if d.is_dir() and _STEP_DIR.match(d.name)]
    out = []
    for d in dirs:
        m = _STEP_DIR.match(d.name)
        out.append((m.group(1), int(m.group(2)), int(m.group(3)), d, sorted(f for f in d.iterdir() if _EPISODE.match(f.name))))
    return sorted(out, key=lambda x: (x[0], x[1], x[2]))


def turn(s: Any, where: str) -> Dict[str, Any]:
    if not isinstance(s, dict):
        raise shapes.ShapeError(f"{where}: expected a step object")
    obs, action = s.get("observation"), s.get("action")
    chat = s.get("chat_completions") or []
    obs_text, act_text = _text(obs), _text(action)
    if (not obs_text or not act_text) and isinstance(chat, list) and chat:
        try:  # the conversation up to this step: its last assistant reply and the messages before it
            last = turns_of(chat, 0.0, where)[0][-1]
            obs_text = obs_text or last["observation"]
            act_text = act_text or last["action"]
        except shapes.ShapeError:
            pass
    act_text = act_text or _text(s.get("model_response"))
    out: Dict[str, Any] = {"observation": obs_text, "action": act_text,
                           "reward": shapes.to_number(s.get("reward", 0.0), f"{where}.reward"), "done": bool(s.get("done"))}
    info = {}
    if s.get("thought"):
        info["thought"] = s["thought"]
    if s.get("model_response") and s["model_response"] != act_text:
        info["model_response"] = s["model_response"]
    if s.get("timing"):
        info["timing"] = s["timing"]
    if info:
        out["info"] = info
    return out


def episode(ep: Dict[str, Any], src: Source, where: str) -> List[Tuple[str, Dict[str, Any]]]:
    """(group uid, trajectory) of each trajectory of one episode file with steps; the others are reported."""
    eid = ep.get("episode_id")
    if not isinstance(eid, str) or not eid:
        raise shapes.ShapeError("episode_id: required (rLLM's task_id:rollout_idx)")
    trajs = ep.get("trajectories")
    if not isinstance(trajs, list):
        raise shapes.ShapeError("trajectories: expected a list")
    task_id = eid.split(":")[0]
    reason = ep.get("termination_reason")
    about = {k: ep[k] for k in ("episode_id", "session_id", "epoch", "task", "task_hash", "is_correct", "termination_reason",
                                "metrics", "metadata", "timing") if ep.get(k) not in (None, {}, [])}
    out = []
    for ti, t in enumerate(trajs):
        tw = f"{where}: trajectories[{ti}]"
        if not isinstance(t, dict):
            src.reject(tw, "expected a trajectory object")
            continue
        steps = t.get("steps")
        if not isinstance(steps, list) or not steps:
            src.reject(tw, "no steps (rLLM leaves such a trajectory out of training too)")
            continue
        try:
            turns = [turn(s, f"trajectories[{ti}].steps[{si}]") for si, s in enumerate(steps)]
            reward = t.get("reward")
            reward = turns[-1]["reward"] if reward is None else shapes.to_number(reward, f"trajectories[{ti}].reward")
            name = t.get("name") or _DEFAULT_TRAJ_NAME
            turns[-1].setdefault("info", {})["rllm"] = dict(about, trajectory={"name": name, "uid": t.get("uid"),
                                                                                 **({"timing": t["timing"]} if t.get("timing") else {})})
            body = shapes.trajectory_body({"turns": turns, "reward": reward, "success": bool(ep.get("is_correct")),
                                           "truncated": reason in _TRUNCATED}, tw)
        except shapes.ShapeError as e:
            src.reject(tw, str(e))
            continue
        out.append((f"{task_id}:{name}", body))
    return out


def read(path: str, env_id: str = "external") -> List[Source]:
    """rLLM EpisodeLogger files (episode_log_dir/episodes/<mode>_step_<N>_epoch_<E>/episode_*.json): an episode's trajectories per task group"""
    p = Path(path)
    folders = _folders(p) if p.exists() else []
    if not folders:
        raise unsupported(path, "rllm", _READS)
    base = p if p.is_dir() and not _STEP_DIR.match(p.name) else (p.parent if p.is_dir() else p.parent.parent)
    base = base.parent if base.name == "episodes" else base
    root = os.path.abspath(p)  # under PATH (an archive's import keys name the archive, base.py _rebase)
    sources: Dict[str, Source] = {}
    seen: Dict[Tuple[str, int], str] = {}
    for mode, step, epoch, d, files in folders:
        src = sources.get(mode)
        if src is None:
            src = sources[mode] = Source(name=base.name if mode == "train" else f"{base.name} ({mode})",
                                         config={"source": "rLLM EpisodeLogger", "mode": mode}, key=os.path.join(root, mode), env_id=env_id)
        if (mode, step) in seen:
            src.reject(d.name, f"step {step} was read from {seen[(mode, step)]} already; this folder is not imported")
            continue
        seen[(mode, step)] = d.name
        summary = d / "batch_summary.json"
        if summary.is_file() and p.is_dir():
            try:
                listed = json.loads(summary.read_text()).get("episode_files") or []
            except (ValueError, AttributeError, UnicodeDecodeError):
                listed = []
            names = {f.name for f in files}
            for name in listed:
                if isinstance(name, str) and name not in names:
                    src.reject(f"{d.name}/{name}", "listed in batch_summary.json but missing")
        groups: Dict[str, List[Dict[str, Any]]] = {}
        for f in files:
            where = f"{d.name}/{f.name}"
            size = f.stat().st_size
            if size > MAX_LINE:
                src.reject(where, f"{_mb(size)}, more than the {_mb(MAX_LINE)} one request may hold; skipped")
                continue
            try:
                ep = json.loads(f.read_bytes())
            except (ValueError, UnicodeDecodeError) as e:
                src.reject(where, f"not valid JSON ({e})")
                continue
            try:
                if not isinstance(ep, dict):
                    raise shapes.ShapeError("expected an episode object")
                if ep.get("training_step") not in (None, step):
                    raise shapes.ShapeError(f"training_step: {ep.get('training_step')!r} in the folder of step {step}")
                for uid, traj in episode(ep, src, where):
                    groups.setdefault(uid, []).append(traj)
            except shapes.ShapeError as e:
                src.reject(where, str(e))
        if groups:
            src.add_step(shapes.step_body(step, groups, env_id), sum(len(v) for v in groups.values()), d.name)
    return list(sources.values())
