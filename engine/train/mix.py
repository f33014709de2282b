"""The training mix: how a pool of samples is drawn from the conversations (data.py) and the drills (drills.py).

A pool is drawn from one seed, so a run that saves the seed of its next pool (and the batches left of
this one) continues exactly where it stopped (engine/train/checkpoint.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

from ..core.tokenizer import QwenTokenizer
from .data import Sample, Slots, conversation, conversation_sample, conversation_words, heldout_words, vocabulary_words
from .drills import copy_sample, drill_sample, letter_pieces, pieces_sample, spelling_candidates


@dataclass(frozen=True)
class Mix:
    """Shares of a pool by kind; what is left after the drills is conversations."""

    drill: float = 0.2  # spelling drills
    copy: float = 0.25  # copy drills: count questions and their calls
    pieces: float = 0.0  # pieces drills: a made-up word copied into a call (drills.pieces_sample)
    untooled: float = 0.0  # of the conversations, the share that offers no tool and is answered in words
    composed: float = 0.0  # of the count questions, the share phrased from parts (data.count_phrasing)
    capitalised: bool = False  # some conversation words written with a capital (data.CAPITALISED)
    made_up: float = 0.0  # of the words a conversation names, the share made up of letter pieces (data.Slots)


@cache
def _pieces(tok: QwenTokenizer) -> tuple[str, ...]:
    held = heldout_words()
    return tuple(p for p in letter_pieces(tok) if p.lower() not in held)


def build_samples(
    count: int, seed: int, tok: QwenTokenizer, mix: Mix, candidates: frozenset[int] | None = None
) -> list[Sample]:
    """`count` samples drawn from `seed` in `mix`'s shares.

    `candidates` is spelling_candidates(tok), passed by a caller that already has it (training draws a pool
    of samples again and again); found here when a drill needs it and none is given.
    """
    rng = random.Random(seed)
    drill_words = vocabulary_words(tok)
    slots = Slots(
        rng,
        conversation_words(tok),
        composed=mix.composed,
        capitalised=mix.capitalised,
        pieces=_pieces(tok) if mix.made_up else (),
        made_up=mix.made_up,
    )
    if candidates is None:
        candidates = frozenset(spelling_candidates(tok)) if mix.copy or mix.pieces else frozenset()
    held = heldout_words()
    samples = []
    for _ in range(count):
        roll = rng.random()
        if roll < mix.drill:
            samples.append(drill_sample(rng, drill_words, tok))
        elif roll < mix.drill + mix.copy:
            samples.append(copy_sample(rng, slots, tok, candidates))
        elif roll < mix.drill + mix.copy + mix.pieces:
            samples.append(pieces_sample(rng, slots, _pieces(tok), tok, candidates, held))
        else:
            samples.append(conversation_sample(conversation(rng, slots, mix.untooled), tok))
    return samples
