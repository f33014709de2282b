"""What the sampling settings do to each step of a turn: the model's own distribution beside the one a draw used.

The decode loop (engine/model/decode.py) reports each step under temperature only; a lesson that
moves the temperature and top-p wants the distribution before them and after them. This reads
the turn again in one forward pass (the prompt and the tokens drawn, each position's logits kept)
and applies, per step, the loop's own arithmetic (its `draw_from` and `fast_topk`):

    logits -> softmax                                          = before: the model's own probabilities
           -> softmax(logits / temperature) -> top-k -> top-p  = after: what the draw picked from, renormalised
    temperature 0: the draw is greedy, so after holds the most likely token alone, at 100%

The draw's top-k cut is `sample_top_k` (the command line's --sample-top-k); the engine's top_k
(--top-k) is how many candidates a step reports, and never narrows the draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.generation import Alternative, GenerationSettings
from ..core.tokenizer import REAL_VOCAB
from ..errors import BadInput
from .decode import draw_from, fast_topk
from .loading import LoadedModel


@dataclass(frozen=True)
class SamplingStep:
    """One step of a turn, before and after the sampling settings."""

    before: list[Alternative]  # the model's own top candidates (softmax of its logits, temperature 1)
    after: list[Alternative]  # the top of the distribution the draw used (temperature, then top-p, renormalised)
    kept: int  # how many tokens the draw could pick (1 at temperature 0)
    drawn_before: float  # the drawn token's probability as the model gave it
    drawn_after: float  # the drawn token's probability in the distribution the draw used


def after_settings(logits: torch.Tensor, settings: GenerationSettings) -> torch.Tensor:
    """The distribution a draw uses at one step: temperature, then the top-k cut and top-p, renormalised (greedy:
    one token at 1)."""
    if settings.temperature == 0:
        picked = torch.zeros_like(logits)
        picked[int(fast_topk(logits, 1)[1][0])] = 1.0
        return picked
    kept = draw_from(torch.softmax(logits / settings.temperature, dim=-1), settings)
    return kept / kept.sum()


def top_of(probs: torch.Tensor, k: int, engine: LoadedModel) -> list[Alternative]:
    values, where = fast_topk(probs, k)
    return [
        Alternative(i, engine.tokenizer.token_text(i), p)
        for i, p in zip(where.tolist(), values.tolist(), strict=True)
        if p > 0
    ]


def sampling_steps(
    engine: LoadedModel, prompt_ids: list[int], drawn: list[int], settings: GenerationSettings
) -> list[SamplingStep]:
    """Each drawn token's step, before and after `settings` (top_k candidates each), from one forward pass."""
    if not drawn or not prompt_ids:
        raise BadInput("sampling steps need a prompt and at least one drawn token")
    settings.check()
    k = max(settings.top_k, 1)
    ids = torch.tensor([[*prompt_ids, *drawn[:-1]]], device=engine.device)
    # one pass reads the prompt and every drawn token but the last; the last len(drawn) positions predict them
    with engine.lock, torch.no_grad():
        logits = engine.model(input_ids=ids, use_cache=False, logits_to_keep=len(drawn)).logits[0].float().cpu()
    steps = []
    for row, token in zip(logits, drawn, strict=True):
        # the padding rows are not tokens, as in the loop
        row[REAL_VOCAB:] = float("-inf")
        before = torch.softmax(row, dim=-1)
        after = after_settings(row, settings)
        steps.append(
            SamplingStep(
                before=top_of(before, k, engine),
                after=top_of(after, k, engine),
                kept=int((after > 0).sum()),
                drawn_before=float(before[token]),
                drawn_after=float(after[token]),
            )
        )
    return steps
