"""logprobs: score given responses under the policy or the frozen reference."""

from __future__ import annotations

import torch

from ..backends import Backend
from ..errors import InvalidRequest
from ..inputs import check_ids, read_allowed, read_prompts, read_temperature
from ..protocol_types import LogprobsParams, LogprobsResult, ScoredResponse
from ..scoring import prepare, score_all
from ..state import EngineState


def run(state: EngineState, q: LogprobsParams) -> LogprobsResult:
    b = state.require()
    prompts = read_prompts(b, q.prompts, q.prompt_ids)
    responses = _read_responses(b, q, len(prompts))
    if q.append_eos:
        if b.tokenizer.eos_id is None:
            raise InvalidRequest("params.append_eos: the tokenizer has no EOS token")
        responses = [r + [b.tokenizer.eos_id] for r in responses]
    temperature, _ = read_temperature(q.temperature)
    sets = read_allowed(b, q.allowed, q.allowed_per_prompt, len(prompts))
    if q.model == "reference" and not b.has_reference:
        raise InvalidRequest('params.model: "reference" needs init with kl_coef > 0 (no frozen reference kept)')
    if not prompts:
        return LogprobsResult(results=[])
    prep = prepare(b, prompts, responses, sets)
    lp, ent = score_all(b, prep, temperature, q.micro_batch_size, reference=q.model == "reference", with_entropy=True)
    lp = torch.where(prep.ok, lp, torch.full_like(lp, float("-inf")))  # outside allowed: log 0
    lp_rows = lp.cpu().tolist()
    ent_rows = ent.cpu().tolist()
    results = []
    for i, r_ids in enumerate(responses):
        tok_lp = lp_rows[i][: len(r_ids)]
        s = float(sum(tok_lp))
        results.append(
            ScoredResponse(
                prompt_ids=prompts[i],
                response_ids=r_ids,
                logprobs=tok_lp,
                entropies=ent_rows[i][: len(r_ids)],
                token_texts=b.tokenizer.token_texts(r_ids),
                sum=s,
                mean=s / len(tok_lp) if tok_lp else None,
                num_tokens=len(tok_lp),
            )
        )
    return LogprobsResult(results=results)


def _read_responses(b: Backend, q: LogprobsParams, n: int) -> list[list[int]]:
    # one of two fields, one response per prompt: rules across fields, not the schema's
    if (q.responses is None) == (q.response_ids is None):
        raise InvalidRequest("params: give exactly one of responses (text) or response_ids")
    if q.response_ids is not None:
        out = [check_ids(b, x, f"params.response_ids[{i}]") for i, x in enumerate(q.response_ids)]
    else:
        out = [b.tokenizer.encode(s) for s in q.responses]
    if len(out) != n:
        raise InvalidRequest(f"params: {len(out)} responses for {n} prompts (expected one per prompt)")
    return out
