"""How often a sampled call comes out malformed with the grammar off: lesson 3's estimate, made by sampling.

`samples` turns for one request at the same temperature and top-p, seeds seed, seed+1, …, no grammar;
each turn read by its format's own parser (engine/core/call_formats parse_turn) and each block judged
by the eval harness's rules (engine/harness/eval.py judge_turn): a valid call, or unusable by kind
(bad_json, unknown_tool, bad_arguments, cut_off, not_closed). The share is a count over these turns,
with a 95% Wilson interval for its spread: a figure measured now, never a fixed one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from dataclasses import dataclass

from ..core.call_formats import parse_turn
from ..core.generation import GenerationSettings
from ..core.prompt import Request
from ..errors import BadInput
from ..harness.eval import judge_turn

MAX_SAMPLES = 40  # a class waits for these; each is a whole turn


@dataclass(frozen=True)
class SampledCalls:
    """What `samples` sampled turns did, counted."""

    samples: int
    settings: GenerationSettings  # the first turn's; turn n ran with seed settings.seed + n
    malformed: int  # turns with at least one unusable call block
    valid: int  # turns whose every call block was valid (at least one)
    no_call: int  # turns with no call block: an answer in words
    kinds: dict[str, int]  # unusable blocks by kind
    low: float  # the 95% Wilson interval of malformed / samples
    high: float
    example: str | None  # the first malformed turn's text
    seconds: float


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of hits / n (95% at z = 1.96): sound at 0 and at n, where p ± z·se is not."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - spread), min(1.0, centre + spread)


def sample_calls(engine, request: Request, settings: GenerationSettings, samples: int, on_turn=None) -> SampledCalls:
    """Sample `samples` turns of `request` under `settings` with no grammar and count the malformed calls.

    `on_turn(n)` is told after each turn (a progress bar)."""
    from ..model.live import generate_turn

    if not 1 <= samples <= MAX_SAMPLES:
        raise BadInput(f"samples must be from 1 to {MAX_SAMPLES}, not {samples}")
    started = time.perf_counter()
    malformed = valid = no_call = 0
    kinds: Counter = Counter()
    example = None
    for n in range(samples):
        turn = generate_turn(engine, request, dataclasses.replace(settings, seed=settings.seed + n))
        verdict = judge_turn(parse_turn(turn.text, request.tools, request.style), turn.finish)
        bad = [b.kind for b in verdict.blocks if b.kind is not None]
        kinds.update(bad)
        if bad:
            malformed += 1
            example = example if example is not None else turn.text
        elif verdict.blocks:
            valid += 1
        else:
            no_call += 1
        if on_turn is not None:
            on_turn(n + 1)
    low, high = wilson(malformed, samples)
    return SampledCalls(
        samples, settings, malformed, valid, no_call, dict(kinds), low, high, example, time.perf_counter() - started
    )
