"""What generate, logprobs and update read off a request and check against the loaded model:
prompts (text, chat messages or token ids), token ids inside the vocabulary, ``allowed`` sets
and the temperature.
"""

from __future__ import annotations

from typing import Any

from .backends import Backend
from .errors import InvalidRequest
from .protocol import Params, check_int_list
from .sampling import AllowedAutomaton, CompletionSet
from .schema import param_defaults
from .tokenizer import TokenizerError

# generate, logprobs and update share one `temperature` field (and default) in the schema
_TEMPERATURE = float(param_defaults("generate")["temperature"])


def read_temperature(p: Params) -> tuple[float, bool]:
    """(temperature, greedy): temperature 0 means greedy, with log-probs reported at T = 1."""
    t = p.float("temperature", _TEMPERATURE, min=0.0)
    return (1.0, True) if t == 0.0 else (t, False)


def check_ids(b: Backend, value: Any, where: str, nonempty: bool = False) -> list[int]:
    """Token ids inside the model's vocabulary."""
    ids = check_int_list(value, where, lo=0, hi=b.vocab_size)
    if nonempty and not ids:
        raise InvalidRequest(f"{where}: must not be empty")
    return ids


def read_prompts(b: Backend, p: Params) -> list[list[int]]:
    """Exactly one of ``prompts`` (text or chat messages, tokenized here) or ``prompt_ids``."""
    has_text, has_ids = p.has("prompts"), p.has("prompt_ids")
    p.raw("prompts", None), p.raw("prompt_ids", None)  # both are known fields
    if has_text == has_ids:
        raise InvalidRequest("params: give exactly one of prompts (text or chat messages) or prompt_ids")
    if has_ids:
        raw = p.list("prompt_ids")
        return [check_ids(b, x, f"params.prompt_ids[{i}]", nonempty=True) for i, x in enumerate(raw)]
    out = []
    for i, prompt in enumerate(p.list("prompts")):
        where = f"params.prompts[{i}]"
        if isinstance(prompt, list):
            for j, m in enumerate(prompt):
                if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                    raise InvalidRequest(f"{where}[{j}]: expected a message {{role: string, content: string}}")
        elif not isinstance(prompt, str):
            raise InvalidRequest(f"{where}: expected a string or an array of chat messages")
        try:
            ids = b.tokenizer.encode_prompt(prompt)
        except TokenizerError as e:  # e.g. chat messages to the tiny model, which has no template
            raise InvalidRequest(f"{where}: {e}") from None
        if not ids:
            raise InvalidRequest(f"{where}: the prompt encodes to no tokens")
        out.append(ids)
    return out


def read_completion_set(b: Backend, value: Any, where: str) -> CompletionSet:
    """An ``allowed`` set: strings (tokenized without specials), token ids, or id arrays."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise InvalidRequest(f"{where}: expected a non-empty array of strings, token ids or token-id arrays")
    out: list[list[int]] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            ids = b.tokenizer.encode(item)
            if not ids:
                raise InvalidRequest(f"{where}[{i}]: {item!r} encodes to no tokens")
        elif isinstance(item, int) and not isinstance(item, bool):
            ids = check_ids(b, [item], f"{where}[{i}]")
        elif isinstance(item, list):
            ids = check_ids(b, item, f"{where}[{i}]", nonempty=True)
        else:
            raise InvalidRequest(f"{where}[{i}]: expected a string, a token id or an array of token ids")
        out.append(ids)
    return out


def read_allowed(b: Backend, p: Params, n_prompts: int) -> list[CompletionSet]:
    """``allowed`` (one set for every prompt) or ``allowed_per_prompt`` (one per prompt)."""
    if p.has("allowed") and p.has("allowed_per_prompt"):
        raise InvalidRequest("params: give at most one of allowed and allowed_per_prompt")
    if p.has("allowed"):
        s = read_completion_set(b, p.raw("allowed"), "params.allowed")
        p.raw("allowed_per_prompt", None)
        return [s] * n_prompts
    per = p.list("allowed_per_prompt", None)
    p.raw("allowed", None)
    if per is None:
        return [None] * n_prompts
    if len(per) != n_prompts:
        raise InvalidRequest(
            f"params.allowed_per_prompt: expected {n_prompts} entries (one per prompt), got {len(per)}"
        )
    return [read_completion_set(b, x, f"params.allowed_per_prompt[{i}]") for i, x in enumerate(per)]


def automaton(b: Backend, sets: list[CompletionSet]) -> AllowedAutomaton:
    """The allowed sets of a batch compiled for the model's vocabulary (sampling.py)."""
    try:
        return AllowedAutomaton(sets, b.vocab_size, b.tokenizer.eos_id, b.device)
    except ValueError as e:
        raise InvalidRequest(f"params.{e}") from None
