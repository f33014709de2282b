"""The plain-text drills the shipped model trains on beside its conversations: spelling, copying, and pieces copied.

A question names " strawberry" (one token, with its space); inside a call the word is written
without the space, as "str", "aw", "berry". Three drills teach that copy without a conversation's
system prompt, so a batch of them holds many more copies than a batch of conversations:

- the spelling drill: ' strawberry → "strawberry"' lines over the vocabulary's words, scored on the
  spelling (the model learns each word's pieces, as a large model does in pretraining);
- the copy drill: count questions, each followed by its call, scored on the call's values;
- the pieces drill: a short sequence (48-96 tokens) in which a made-up word of one to four pieces
  drawn from thousands of the vocabulary's letter pieces stands somewhere in a question, then is
  written again as a call's argument, scored on the copy alone. No word of it can be learned by
  heart, so the only way to lower its loss is to copy: the induction step (find where the word
  stood, write the piece that followed it) that small transformers learn late and only when
  drilled on it (Olsson et al. 2022, "In-context Learning and Induction Heads"; Bietti et al. 2023,
  "Birth of a Transformer: A Memory Viewpoint").

Each drill is scored against `spelling_candidates` (the pieces a copy can be made of), not all
151,936 rows: their question is which piece comes next, and the conversations' softmax teaches the rest.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ..core.call_formats import get_format
from ..core.tokenizer import QwenTokenizer
from .data import STYLE_NAMES, WORD_ID_LIMIT, Sample, Slots, count_phrasing, vocabulary_words, word_first_phrasing

DRILL_TOKENS = 320  # tokens in one spelling or copy drill sequence
PIECES_TOKENS = (48, 96)  # a pieces drill's length, drawn in this range
COPY_FROM = '{"word": "'  # a copy drill scores its call from here on: the word's pieces, then the letter
PIECE_PATTERN = re.compile(r"[A-Za-z]{2,8}")  # a piece a made-up word is built of: letters, no space
FILLER_WORDS = 8  # at most this many words of filler before and after a pieces drill's question
WORD_FIRST = 0.25  # share of pieces drills whose question opens a line with the word (data.word_first_phrasing)
MAX_TRIES = 200  # made-up words drawn for one drill before it gives up (a few are left out: see pieces_sample)


def drill_sample(rng: random.Random, words: list[str], tok: QwenTokenizer) -> Sample:
    """A plain-text spelling drill: ' word → "word"' lines, the loss on each spelling and its closing quote."""
    ids: list[int] = []
    targets: list[bool] = []
    while len(ids) < DRILL_TOKENS:
        word = rng.choice(words)
        shown = tok.encode(f" {word} →")
        spelled = tok.encode(f' "{word}"\n')
        ids += shown + spelled
        # the opening quote is not learned here (nothing predicts it); the spelling and the close are
        targets += [False] * (len(shown) + 1) + [True] * (len(spelled) - 1)
    return Sample("drill", ids[:DRILL_TOKENS], targets[:DRILL_TOKENS])


def copy_sample(rng: random.Random, slots: Slots, tok: QwenTokenizer, candidates: frozenset[int]) -> Sample:
    """A plain-text copy drill: count questions, each followed by its call, the loss on the call's argument values.

    The conversations ask the same, but behind a system prompt of tool schemas: a count conversation
    is about 290 tokens, a drill's line about 40, so a batch of drills holds several times more copies.
    """
    ids: list[int] = []
    targets: list[bool] = []
    while len(ids) < DRILL_TOKENS:
        word = slots.word()
        letter = slots.letter(word)
        question = count_phrasing(rng, slots.composed).format(letter=letter, word=word)
        call = get_format(rng.choice(STYLE_NAMES)).write_call("count_letter", {"word": word, "letter": letter})
        # the call up to the word's opening quote, then its values: only the values are scored
        head = tok.encode(f"{question}\n{call.partition(COPY_FROM)[0]}{COPY_FROM}")
        line = tok.encode(f"{question}\n{call}\n\n")
        if line[: len(head)] != head:
            continue  # the word merged with the quote before it: a rare tokenization, left out
        ids += line
        targets += [False] * len(head) + [token in candidates for token in line[len(head) :]]
    return Sample("copy", ids[:DRILL_TOKENS], targets[:DRILL_TOKENS])


def letter_pieces(tok: QwenTokenizer) -> list[str]:
    """The pieces a pieces drill builds its words from: every token below WORD_ID_LIMIT that is 2-8 letters, no space."""
    return [t for t in (tok.token_text(i) for i in range(WORD_ID_LIMIT)) if PIECE_PATTERN.fullmatch(t)]


def made_up_word(rng: random.Random, pieces: Sequence[str]) -> str:
    """One to four pieces run together, capitalised a fifth of the time (Mississippi stays Mississippi in a call)."""
    word = "".join(rng.choice(pieces).lower() for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
    return word.capitalize() if rng.random() < 0.2 else word


def pieces_sample(
    rng: random.Random,
    slots: Slots,
    pieces: Sequence[str],
    tok: QwenTokenizer,
    candidates: frozenset[int],
    held: frozenset[str] | set[str] = frozenset(),
) -> Sample:
    """A short pieces drill: filler, a count question naming a made-up word, filler, then its call, scored on the copy.

    What is scored is the word as the call writes it, without its space, and the quote that closes it:
    the letter after it is the copy drill's to teach.
    """
    length = rng.randint(*PIECES_TOKENS)
    for _ in range(MAX_TRIES):
        word = made_up_word(rng, pieces)
        if word.lower() in held:
            continue  # a held-out word made by chance ("ban" + "ana") is never drilled
        letter = rng.choice(word.lower())
        after = " ".join(rng.choice(slots.words) for _ in range(rng.randint(0, FILLER_WORDS)))
        if rng.random() < WORD_FIRST:
            # the question opens a line with the word, so its first piece has no space, as in the call
            question = word_first_phrasing(rng).format(letter=letter, word=word)
            text = "\n" + " ".join(part for part in (question, after) if part)
        else:
            question = count_phrasing(rng, slots.composed).format(letter=letter, word=word)
            before = " ".join(rng.choice(slots.words) for _ in range(rng.randint(0, FILLER_WORDS)))
            text = " ".join(part for part in (before.capitalize(), question, after) if part)
        call = get_format(rng.choice(STYLE_NAMES)).write_call("count_letter", {"word": word, "letter": letter})
        head = tok.encode(f"{text}\n{call.partition(COPY_FROM)[0]}{COPY_FROM}")
        line = tok.encode(f"{text}\n{call}\n")
        scored = copy_tokens(tok, line, len(head), word)
        # the word must start a token of its own after the quote, and every piece of its copy be a candidate
        if line[: len(head)] != head or scored is None or not all(token in candidates for token in scored):
            continue
        end = len(head) + len(scored)
        pad = max(0, length - len(line))
        # the loss on the copy alone: the word's pieces and the token that closes its quote
        targets = [False] * len(head) + [True] * len(scored) + [False] * (len(line) - end)
        filler = tok.encode("".join(" " + rng.choice(slots.words) for _ in range(pad)))[:pad]
        return Sample("copy", filler + line, [False] * len(filler) + targets)
    raise RuntimeError(f"no pieces drill could be made in {MAX_TRIES} tries: check the pieces and candidates")


def copy_tokens(tok: QwenTokenizer, line: list[int], start: int, word: str) -> list[int] | None:
    """The tokens from `start` on that write `word` and its closing quote (the quote may share a token with what
    follows it, as `",`); None where the word's last piece and the quote run into each other some other way."""
    written = ""
    for end in range(start, len(line)):
        written += tok.token_text(line[end])
        if len(written) > len(word):
            return line[start : end + 1] if written.startswith(word + '"') else None
    return None


def spelling_candidates(tok: QwenTokenizer) -> list[int]:
    """Every token a drill's line can predict: the pieces of each word written without its space, what closes it,
    and every letter piece a made-up word is built of.

    The drills' loss is a softmax over these (about 20,000) rather than all 151,936 rows: their
    question is which piece spells the word, and the conversations' full softmax teaches the rest.
    A copy drill's values end in a call's punctuation and a letter, so those are in too.
    """
    found = set(tok.encode('"\n'))
    for word in vocabulary_words(tok):
        found.update(tok.encode(f' "{word}"\n')[1:])
    for style in STYLE_NAMES:
        for letter in "abcdefghijklmnopqrstuvwxyz":
            call = get_format(style).write_call("count_letter", {"word": "x", "letter": letter})
            found.update(tok.encode(call.partition(COPY_FROM)[2] + "\n\n")[1:])
    for piece in letter_pieces(tok):
        found.update(tok.encode(piece))
    return sorted(found)
