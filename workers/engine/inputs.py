"""What generate, logprobs and update read off a request and check against the loaded model:
prompts (text, chat messages or token ids), token ids inside the vocabulary, ``allowed`` sets
and the temperature. Types and ranges were checked by the schema before; what is left here is
what a schema cannot say: the model's vocabulary and tokenizer, and rules across fields.
"""

from __future__ import annotations

from typing import Any

from .backends import Backend
from .errors import InvalidRequest
from .protocol import check_int_list
from .sampling import AllowedAutomaton, CompletionSet
from .tokenizer import TokenizerError


def read_temperature(t: float) -> tuple[float, bool]:
    """(temperature, greedy): temperature 0 means greedy, with log-probs reported at T = 1."""
    return (1.0, True) if t == 0.0 else (t, False)


def check_ids(b: Backend, value: list[int], where: str) -> list[int]:
    """Token ids inside the model's vocabulary."""
    return check_int_list(value, where, lo=0, hi=b.vocab_size)


def read_prompts(b: Backend, prompts: list[Any] | None, prompt_ids: list[list[int]] | None) -> list[list[int]]:
    """Exactly one of ``prompts`` (text or chat messages, tokenized here) or ``prompt_ids``."""
    if (prompts is None) == (prompt_ids is None):  # one of two fields: a rule the schema does not state
        raise InvalidRequest("params: give exactly one of prompts (text or chat messages) or prompt_ids")
    if prompt_ids is not None:
        return [check_ids(b, x, f"params.prompt_ids[{i}]") for i, x in enumerate(prompt_ids)]
    out = []
    for i, prompt in enumerate(prompts):
        where = f"params.prompts[{i}]"
        try:
            ids = b.tokenizer.encode_prompt(prompt)
        except TokenizerError as e:  # e.g. chat messages to the tiny model, which has no template
            raise InvalidRequest(f"{where}: {e}") from None
        if not ids:
            raise InvalidRequest(f"{where}: the prompt encodes to no tokens")
        out.append(ids)
    return out


def read_completion_set(b: Backend, value: list[Any] | None, where: str) -> CompletionSet:
    """An ``allowed`` set: strings (tokenized without specials), token ids, or id arrays."""
    if value is None:
        return None
    out: list[list[int]] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            ids = b.tokenizer.encode(item)
            if not ids:
                raise InvalidRequest(f"{where}[{i}]: {item!r} encodes to no tokens")
        else:
            ids = check_ids(b, [item] if isinstance(item, int) else item, f"{where}[{i}]")
        out.append(ids)
    return out


def read_allowed(
    b: Backend, allowed: list[Any] | None, per_prompt: list[list[Any] | None] | None, n_prompts: int
) -> list[CompletionSet]:
    """``allowed`` (one set for every prompt) or ``allowed_per_prompt`` (one per prompt)."""
    # at most one of the two, and one set per prompt: rules across fields, not the schema's
    if allowed is not None and per_prompt is not None:
        raise InvalidRequest("params: give at most one of allowed and allowed_per_prompt")
    if allowed is not None:
        return [read_completion_set(b, allowed, "params.allowed")] * n_prompts
    if per_prompt is None:
        return [None] * n_prompts
    if len(per_prompt) != n_prompts:
        raise InvalidRequest(
            f"params.allowed_per_prompt: expected {n_prompts} entries (one per prompt), got {len(per_prompt)}"
        )
    return [read_completion_set(b, x, f"params.allowed_per_prompt[{i}]") for i, x in enumerate(per_prompt)]


def automaton(b: Backend, sets: list[CompletionSet]) -> AllowedAutomaton:
    """The allowed sets of a batch compiled for the model's vocabulary (sampling.py)."""
    try:
        return AllowedAutomaton(sets, b.vocab_size, b.tokenizer.eos_id, b.device)
    except ValueError as e:
        raise InvalidRequest(f"params.{e}") from None
