"""Spelled embeddings: while the shipped model trains, a word's row is built from the rows of the pieces that spell it.

A question names " strawberry" (one token, with its space); inside a call the word is written
without the space, as "str", "aw", "berry". To copy a word it never saw in a conversation, the
model has to read those pieces off the word's own row. A row learned freely holds nothing of its
spelling, so a small model cannot do that for a word it was not drilled on. Here each such row
is the sum of a free part and its pieces' rows, each scaled by the weight of its place (first,
second, …, falling; an end marker after the last), so a word's row spells it by construction and
a word that no conversation names is spelled the same way as one that many do. The first piece
weighs most: the model writes it, then takes away what it wrote and writes the next-heaviest.

With `rotate_places`, the piece at each place after the first is also turned by a fixed random
rotation of its own before it is added. Summed as they are, the pieces of one row otherwise blur into
each other (the second piece looks like a weaker first one, and training shrinks the later places'
weights until only the first is read); turned, each place sits in directions of its own, which a
layer can learn to turn back, so the model can read the second piece as cleanly as the first.

It is a way of training, not a new layer: `bake` writes the built rows into the embedding, and
the saved network is a plain Qwen3 whose embedding happens to spell its words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ..core.tokenizer import QwenTokenizer

# the rows built from their pieces: a space and 2-14 letters, below the ids of Qwen's rarest scripts
SPELLED_PATTERN = re.compile(r" [A-Za-z]{2,14}")
SPELLED_ID_LIMIT = 110_000
PLACES = 5  # up to four pieces, then the end marker
NO_PIECE, END = -1, -2
PLACE_WEIGHTS = (1.0, 0.7, 0.5, 0.35, 0.25)  # where training starts them; they are learned


@dataclass
class SpelledWords:
    """The rows to build (token ids) and, for each, its pieces' ids by place (NO_PIECE past the end marker)."""

    rows: torch.Tensor  # (R,)
    pieces: torch.Tensor  # (R, PLACES)


def spelled_words(tok: QwenTokenizer) -> SpelledWords:
    """Every word token whose spelling without its space is at most four other tokens."""
    rows, pieces = [], []
    for token_id in range(SPELLED_ID_LIMIT):
        text = tok.token_text(token_id)
        if not SPELLED_PATTERN.fullmatch(text):
            continue
        spelling = tok.encode(text[1:])
        if len(spelling) >= PLACES or token_id in spelling:
            continue
        rows.append(token_id)
        pieces.append(spelling + [END] + [NO_PIECE] * (PLACES - len(spelling) - 1))
    return SpelledWords(torch.tensor(rows), torch.tensor(pieces))


class SpelledEmbedding(torch.nn.Module):
    """The embedding's weight with the word rows built from their pieces; its own parameters are the places' weights."""

    def __init__(
        self,
        embedding: torch.nn.Parameter,
        words: SpelledWords,
        seed: int,
        rotate_places: bool = False,
        keep_rows: bool = False,
    ):
        super().__init__()
        hidden = embedding.shape[1]
        generator = torch.Generator().manual_seed(seed)
        self.embedding = [embedding]  # held, not registered: the network owns and trains it
        self.words = words
        self.places = torch.nn.Parameter(torch.tensor(PLACE_WEIGHTS))
        self.shift = torch.nn.Parameter(torch.randn(hidden, generator=generator) * 0.02)
        self.end = torch.nn.Parameter(torch.randn(hidden, generator=generator) * 0.02)
        self.rotations = None  # (PLACES, hidden, hidden): the first place as it is, each later one turned, fixed
        if rotate_places:
            turned = [torch.linalg.qr(torch.randn(hidden, hidden, generator=generator))[0] for _ in range(PLACES - 1)]
            self.rotations = torch.stack([torch.eye(hidden), *turned])
        # the pieces laid out once for embedding_bag: each row's real pieces in order, and its end marker's place
        real = words.pieces >= 0
        self.flat_pieces = words.pieces[real]
        self.place_of_piece = torch.arange(PLACES).expand_as(words.pieces)[real]
        self.offsets = torch.cat([torch.zeros(1, dtype=torch.long), real.sum(1).cumsum(0)[:-1]])
        self.end_place = (words.pieces == END).long().argmax(1)
        with torch.no_grad():
            if keep_rows:
                # warm-started from saved weights: the free part is what the pieces do not give, so each row keeps
                # the value it was saved with (pieces are never word rows: they have no leading space)
                saved = embedding[words.rows].clone()
                built = self.weight()[words.rows]  # saved + what the pieces, shift and end give
                embedding[words.rows] = 2 * saved - built
            else:
                # a word row's free part starts at zero: at first the row is its spelling alone
                embedding[words.rows] = 0.0

    def weight(self) -> torch.Tensor:
        """The whole embedding (151,936 rows), the word rows built from their pieces; gradients reach both."""
        embedding = self.embedding[0]
        if self.rotations is None:
            # each row's pieces weighted by their places' weights and summed in one pass, no (rows × places × hidden)
            spelling = torch.nn.functional.embedding_bag(
                self.flat_pieces,
                embedding,
                self.offsets,
                mode="sum",
                per_sample_weights=self.places[self.place_of_piece],
            )
            spelling = spelling + self.places[self.end_place][:, None] * self.end
            return embedding.index_put((self.words.rows,), embedding[self.words.rows] + self.shift + spelling)
        pieces = self.words.pieces
        found = embedding[pieces.clamp(min=0)]  # (R, PLACES, hidden)
        found = torch.where((pieces == END)[..., None], self.end.expand_as(found), found)
        found = torch.where((pieces == NO_PIECE)[..., None], torch.zeros_like(found), found)
        if self.rotations is not None:
            found = torch.einsum("rpi,poi->rpo", found, self.rotations)  # each place's piece turned by its rotation
        built = embedding[self.words.rows] + self.shift + (self.places[None, :, None] * found).sum(1)
        return embedding.index_put((self.words.rows,), built)

    @torch.no_grad()
    def bake(self) -> None:
        """Write the built rows into the embedding itself: from here on the network is a plain Qwen3."""
        self.embedding[0].copy_(self.weight())
