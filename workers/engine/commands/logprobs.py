"""logprobs: score given responses under the policy or the frozen reference."""

from __future__ import annotations

import torch

from ..backends import Backend
from ..errors import InvalidRequest
from ..inputs import check_ids, read_allowed, read_prompts, read_temperature
from ..protocol import Params
from ..schema import param_defaults
from ..scoring import prepare, score_all
from ..state import EngineState

_D = param_defaults("logprobs")  # the defaults, written once in the protocol schema


def run(state: EngineState, p: Params) -> dict:
    b = state.require()
    prompts = read_prompts(b, p)
    responses = _read_responses(b, p, len(prompts))
    if p.bool("append_eos", _D["append_eos"]):
        if b.tokenizer.eos_id is None:
            raise InvalidRequest("params.append_eos: the tokenizer has no EOS token")
        responses = [r + [b.tokenizer.eos_id] for r in responses]
    temperature, _ = read_temperature(p)
    micro = p.int("micro_batch_size", _D["micro_batch_size"], min=1)
    which = p.str("model", _D["model"], choices=("policy", "reference"))
    sets = read_allowed(b, p, len(prompts))
    p.finish()
    if which == "reference" and not b.has_reference:
        raise InvalidRequest('params.model: "reference" needs init with kl_coef > 0 (no frozen reference kept)')
    if not prompts:
        return {"results": []}
    prep = prepare(b, prompts, responses, sets)
    lp = score_all(b, prep, temperature, micro, reference=which == "reference")
    lp = torch.where(prep.ok, lp, torch.full_like(lp, float("-inf")))  # outside allowed: log 0
    lp_rows = lp.cpu().tolist()
    results = []
    for i, r_ids in enumerate(responses):
        tok_lp = lp_rows[i][: len(r_ids)]
        s = float(sum(tok_lp))
        results.append(
            {
                "prompt_ids": prompts[i],
                "response_ids": r_ids,
                "logprobs": tok_lp,
                "token_texts": b.tokenizer.token_texts(r_ids),
                "sum": s,
                "mean": s / len(tok_lp) if tok_lp else None,
                "num_tokens": len(tok_lp),
            }
        )
    return {"results": results}


def _read_responses(b: Backend, p: Params, n: int) -> list[list[int]]:
    has_text, has_ids = p.has("responses"), p.has("response_ids")
    if has_text == has_ids:
        p.raw("responses", None), p.raw("response_ids", None)
        raise InvalidRequest("params: give exactly one of responses (text) or response_ids")
    p.raw("responses", None), p.raw("response_ids", None)
    if has_ids:
        raw = p.list("response_ids")
        out = [check_ids(b, x, f"params.response_ids[{i}]") for i, x in enumerate(raw)]
    else:
        raw = p.list("responses")
        out = []
        for i, s in enumerate(raw):
            if not isinstance(s, str):
                raise InvalidRequest(f"params.responses[{i}]: expected a string")
            out.append(b.tokenizer.encode(s))
    if len(out) != n:
        raise InvalidRequest(f"params: {len(out)} responses for {n} prompts (expected one per prompt)")
    return out
