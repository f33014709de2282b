"""The model's next-token distribution at one point of a prompt, for lessons that need one step.

`decode.stream_steps` reports the top-k of every step it generates. A lesson sometimes needs
the probability of one particular token instead, wherever it ranks ([[tool-calling-step-by-step]]: how much
Qwen3-1.7B puts on `<tool_call>` as its first token when asked the capital of France), or the
raw logits after a prompt plus part of a turn, so a page can show a grammar's mask before and
after renormalising (`constrain.inspect_mask(..., logits=...)`); `logits_at_each_position` gives
those logits at every token of a whole reply from one forward pass, so a page can send every step at once.

    engine = load_model("tiny")
    first = first_token(engine, render(Request(messages, tools)).ids)
    first.p[TOOL_CALL]            # the probability of <tool_call> as the first token

A recorded trace keeps only each step's top-k, so `p_in_trace_step` says whether the figure
it gives is exact (the token was in the top-k) or only an upper bound.
"""

from __future__ import annotations

import torch

from ..core.generation import Alternative, DecodeStep
from ..core.tokenizer import MODEL_VOCAB, REAL_VOCAB, TOOL_CALL
from ..errors import BadInput
from .fast_build import fast_forward_for
from .loading import LoadedModel
from .remote import RemoteEngine, first_token_remote, refuse_remote
from .results import FirstToken


def next_logits(engine: LoadedModel, ids: list[int]) -> torch.Tensor:
    """Raw logits for the token after `ids`, over the model's 151,936 rows (padding rows -inf)."""
    if not ids:
        raise ValueError("next_logits needs at least one token id")
    refuse_remote(engine)
    feed = torch.tensor([list(ids)], device=engine.device)
    # the forward the decode loop runs, so a peek and a generated step give the same numbers
    forward = fast_forward_for(engine) or engine.model
    with engine.lock, torch.no_grad():
        out = forward(input_ids=feed, logits_to_keep=1)
    logits = out.logits[0, -1].float().cpu()
    # the padding rows are not tokens
    logits[REAL_VOCAB:] = float("-inf")
    return logits


MAX_POSITIONS = 256  # rows of 151,936 floats each (about 0.6 MB a row): a lesson's reply is a few dozen tokens


def logits_at_each_position(engine: LoadedModel, prompt_ids: list[int], reply_ids: list[int]) -> torch.Tensor:
    """Raw logits before each token of a reply, from one forward pass over `prompt_ids` + `reply_ids`.

    Row n is what `next_logits(engine, prompt_ids + reply_ids[:n])` gives, for n = 0 .. len(reply_ids) - 1:
    the model's view when it wrote reply token n + 1. Shape (len(reply_ids), 151,936), padding rows -inf."""
    if not prompt_ids:
        raise ValueError("logits_at_each_position needs at least one prompt token")
    if not reply_ids:
        return torch.empty(0, MODEL_VOCAB)
    if len(reply_ids) > MAX_POSITIONS:
        raise BadInput(
            f"a reply of {len(reply_ids):,} tokens is too long to keep the logits at every token "
            f"(at most {MAX_POSITIONS}); cut the reply"
        )
    refuse_remote(engine)
    # the last reply token's own logits (what would come after it) are not needed
    feed = torch.tensor([list(prompt_ids) + list(reply_ids[:-1])], device=engine.device)
    forward = fast_forward_for(engine) or engine.model
    with engine.lock, torch.no_grad():
        out = forward(input_ids=feed, logits_to_keep=len(reply_ids))
    logits = out.logits[0].float().cpu()
    logits[:, REAL_VOCAB:] = float("-inf")
    return logits


def first_token(
    engine: LoadedModel, prompt_ids: list[int], watch: tuple[int, ...] = (TOOL_CALL,), top_k: int = 10
) -> FirstToken:
    """One forward pass over the prompt: P(each watched id) and the top-k, as the model's first step sees them
    (from a model server: its one-token answer's 20 alternatives, engine/model/remote.py)."""
    if isinstance(engine, RemoteEngine):
        p, top = first_token_remote(engine, prompt_ids, watch, top_k)
        return FirstToken(len(prompt_ids), p, top, engine.info, [engine.tokenizer.token_text(int(i)) for i in watch])
    probs = torch.softmax(next_logits(engine, prompt_ids), dim=-1)
    values, ids = probs.topk(top_k)
    top = [Alternative(int(i), engine.tokenizer.token_text(int(i)), float(v)) for v, i in zip(values, ids, strict=True)]
    return FirstToken(
        prompt_tokens=len(prompt_ids),
        p={int(i): float(probs[i]) for i in watch},
        top=top,
        model=engine.info,
        watched=[engine.tokenizer.token_text(int(i)) for i in watch],
    )


def p_in_trace_step(step: DecodeStep, token_id: int) -> tuple[float, bool]:
    """(probability, exact) of `token_id` at a recorded step.

    Exact when it was the chosen token or in the recorded top-k; otherwise the smallest
    recorded top-k probability, which is an upper bound (exact=False)."""
    if step.id == token_id:
        return step.p, True
    for alternative in step.top:
        if alternative.id == token_id:
            return alternative.p, True
    if not step.top:
        return step.p, False
    return min(a.p for a in step.top), False
